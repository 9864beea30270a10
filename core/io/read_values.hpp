// Internal to core/io: the plain values that cross to and from a reader process (isolated_read.hpp)
// for run files and the states of the run store (checkpoints, kept and final states), and the
// reader kinds that read them (reader_kinds.cpp). The reader reads and checks them with HDF5; the
// caller decodes them and checks them again, since a subverted reader could send anything.
#pragma once
#include <string>
#include <vector>

#include "samebits/core/io/isolated_read.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::run {

void put_state(ByteWriter& out, const TrainerState& state);
// The state put_state wrote, checked against the layout `tensors` (sizes, names, step and
// updates); `where` names the file and group for messages.
TrainerState get_state(ByteReader& in, const std::vector<TensorInfo>& tensors, const std::string& where);

// A tensor table, unchecked (the receiving side checks it: check_tensors or the store file's own).
inline void put_tensors(ByteWriter& out, const std::vector<TensorInfo>& tensors) {
  out.put(uint64_t{tensors.size()});
  for (const TensorInfo& t : tensors) {
    out.put_string(t.name);
    out.put_vector(t.shape);
    out.put(t.offset);
    out.put(t.numel);
  }
}
// At most `limit` tensors (more is an error naming `where`).
std::vector<TensorInfo> get_tensors(ByteReader& in, uint64_t limit, const std::string& where);

inline void put_entry(ByteWriter& out, const StoreEntry& e) {
  out.put(e.step);
  out.put(e.kind);
  out.put(e.digest);
  out.put(e.bytes);
}
inline StoreEntry get_entry(ByteReader& in) {
  StoreEntry e;
  e.step = in.get<int64_t>();
  e.kind = in.get<uint8_t>();
  e.digest = in.get<uint64_t>();
  e.bytes = in.get<uint64_t>();
  return e;
}

// Reader kinds (reader_process.hpp): a run file (run_reader.cpp); a store file's parameters or
// state, with its index entry and the run's tensor table as parameters (run_store.cpp).
void read_run_kind(const std::string& path, ByteReader& params, ByteWriter& answer);
void read_store_params_kind(const std::string& path, ByteReader& params, ByteWriter& answer);
void read_store_state_kind(const std::string& path, ByteReader& params, ByteWriter& answer);

}  // namespace sb::run

namespace sb::io {
// An HDF5 token dataset, with the dataset and the vocabulary as parameters (token_files.cpp).
void read_hdf5_tokens_kind(const std::string& path, ByteReader& params, ByteWriter& answer);
}  // namespace sb::io
