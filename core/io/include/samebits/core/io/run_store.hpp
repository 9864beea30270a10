// The run store (docs/FORMAT.md, format_version 2): what a run holds of size O(parameters) —
// parameter snapshots and full trainer states — lives in sealed files beside the run file, one per
// step, each written once (temporary file, fsync, rename) and never modified:
//   runs/x.h5                 attributes, /tensors, /series, /timing and the index /store
//   runs/x.store/snapshot_step_000100.h5   a snapshot: the parameters after step 100
//   runs/x.store/state_step_000200.h5      a state: parameters, optimizer state, cursor (a checkpoint)
// The run file's index names every store file that belongs to the run with its content hash, so a
// commit writes what it adds (new rows, a new store file, the index), never what the store holds,
// and a file that does not match its index entry is refused. For h5py users the run file also
// links /snapshots/step_N, /states/step_N and /checkpoint (external links) into the store; samebits
// itself never follows links: it reads the index and opens the files it names.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::run {

constexpr std::string_view kSnapshotFormat = "samebits-snapshot";
constexpr std::string_view kStateFormat = "samebits-checkpoint";

// "runs/x.h5" → "runs/x.store" (the extension replaced; ".store" appended when there is none).
std::string store_dir(const std::string& run_path);
// The file of an index entry: "runs/x.store/state_step_000200.h5" for a state (which may serve as
// the snapshot of its step too), "runs/x.store/snapshot_step_000100.h5" for a snapshot alone.
// relative_store_file gives "x.store/…", the name the run file's external links use (HDF5 and
// h5py resolve it beside the run file).
std::string store_file(const std::string& run_path, const StoreEntry& entry);
std::string relative_store_file(const std::string& run_path, const StoreEntry& entry);

// Writes the index into the run file (replacing an earlier one): /store/{step,kind,digest,bytes}
// and the external links for h5py. final_step >= 0 links /checkpoint to that state, which must be
// in `entries`.
void write_store_index(h5::File& run, const std::string& run_path, const std::vector<StoreEntry>& entries,
                       int64_t final_step);
// The index, checked: steps ascending and unique within [0, rows], known kind bits.
std::vector<StoreEntry> read_store_index(const h5::File& run, int64_t rows);

// A snapshot file: root attributes format, format_version, experiment_id, step; /params/<tensor>.
StoreEntry write_snapshot_file(const std::string& path, int64_t step, const std::string& experiment_id,
                               std::span<const float> flat_weights, const std::vector<TensorInfo>& tensors);
// A state file (a checkpoint): the state at the root (checkpoint.hpp write_state).
StoreEntry write_state_file(const std::string& path, const TrainerState& state, const std::vector<TensorInfo>& tensors);
// The same file from head's scalars and the parts' arrays, fetched one at a time as it is written.
StoreEntry write_state_file(const std::string& path, const TrainerState& head, const StateParts& parts,
                            const std::vector<TensorInfo>& tensors);

// Reading a store file checks its seal, that its content hash is the index entry's, its format,
// version and step, then its datasets against the tensor table.
std::vector<float> read_store_params(const std::string& path, const StoreEntry& entry,
                                     const std::vector<TensorInfo>& tensors);
TrainerState read_store_state(const std::string& path, const StoreEntry& entry, const std::vector<TensorInfo>& tensors);

// Files in store_dir(run_path) that the index does not name (left by a session killed between
// writing a file and committing the index, or by a resume that cut the run back): removed.
void remove_unindexed_files(const std::string& run_path, const std::vector<StoreEntry>& entries);

}  // namespace sb::run
