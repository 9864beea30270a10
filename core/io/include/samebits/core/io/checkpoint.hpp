// Checkpoints (docs/FORMAT.md): a TrainerState — step, update count, data cursor, fp16 loss-scale
// state, the parameters (one dataset per tensor, its shape) and the optimizer state buffers — as an
// HDF5 group. Checkpoints are the run store's state files (run_store.hpp: <run>.store/step_N.h5,
// written once, atomically, sealed): a checkpoint file is complete or absent, and never modified.
// Contract: values are stored bit for bit, so a state read back continues the run bitwise.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::run {

// A dataset's bytes, written at `offset` of the file once HDF5 has laid the file out and closed it
// (store_data.hpp: one pass over the file in file order, hashed on the way, direct I/O where the
// file system allows). `data` must live until then; when it is null, `fetch` gives the bytes as
// the pass reaches the dataset (valid until the next fetch).
struct RawWrite {
  uint64_t offset = 0;
  const void* data = nullptr;
  uint64_t bytes = 0;
  std::function<const void*()> fetch;
};

// One dataset per tensor, named as the tensor, f32 with its shape, reserved in the file; its bytes
// are appended to `raw`.  flat: (flat_size(tensors)).
void write_params(h5::Group& group, std::span<const float> flat, const std::vector<TensorInfo>& tensors,
                  std::vector<RawWrite>& raw);
// The flat buffer (zeros in the alignment gaps); every tensor's dataset must exist with its shape.
std::vector<float> read_params(const h5::Group& group, const std::vector<TensorInfo>& tensors);

// The state as a group (attributes step, updates, cursor_epoch, cursor_position, loss_scale*,
// experiment_id; params/<tensor>; optimizer/<tensor>/<kind> with the order in optimizer.names);
// the datasets' bytes go to `raw`, as write_params.
void write_state(h5::Group& group, const TrainerState& state, const std::vector<TensorInfo>& tensors,
                 std::vector<RawWrite>& raw);
// The same state from head's scalars and the parts' arrays, fetched as the data pass reaches them
// (`parts` must live until then): the same file, byte for byte.
void write_state(h5::Group& group, const TrainerState& head, const StateParts& parts,
                 const std::vector<TensorInfo>& tensors, std::vector<RawWrite>& raw);
TrainerState read_state(const h5::Group& group, const std::vector<TensorInfo>& tensors);

// Where `--resume` continues a run: the newest state of the run file's store index that is good
// (the file the index names, readable, of this experiment and layout, its parameter fingerprints
// equal to the run file's at its step, and accepted by `accept` — e.g. Trainer::import_state,
// which throws when it does not fit). None good: step 0, the initialisation.
struct ResumePoint {
  bool finished = false;  // the run file says the run is finished
  int64_t step = 0;
  std::string source;              // the state file, or "" for step 0
  std::vector<std::string> notes;  // each checkpoint passed over, and why
};
ResumePoint find_resume_point(const std::string& run_path, const RunHeader& header,
                              const std::function<void(const TrainerState&)>& accept);

}  // namespace sb::run
