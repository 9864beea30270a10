// Checkpoints (docs/FORMAT.md): a TrainerState — step, update count, data cursor, fp16 loss-scale
// state, the parameters (one dataset per tensor, its shape) and the optimizer state buffers — as an
// HDF5 group. Periodic checkpoints are sealed files <run>.ckpt/step_NNNNNN.h5 written atomically
// (temporary file, fsync, rename): a checkpoint file is complete or absent, and never modified.
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
#include "samebits/core/train/trainer.hpp"

namespace sb::run {

constexpr std::string_view kCheckpointFormat = "samebits-checkpoint";

// "runs/x.h5" → "runs/x.ckpt" (the extension replaced; ".ckpt" appended when there is none).
std::string checkpoint_dir(const std::string& run_path);
// "runs/x.ckpt/step_000100.h5".
std::string checkpoint_file(const std::string& run_path, int64_t step);

struct CheckpointEntry {
  int64_t step = 0;
  std::string path;
};
// The step_*.h5 files in checkpoint_dir(run_path), ascending by step (unchecked: read them to know
// whether they are good). Empty when the folder does not exist.
std::vector<CheckpointEntry> list_checkpoints(const std::string& run_path);

// One dataset per tensor, named as the tensor, f32 with its shape.  flat: (flat_size(tensors)).
void write_params(h5::Group& group, std::span<const float> flat, const std::vector<TensorInfo>& tensors);
// The flat buffer (zeros in the alignment gaps); every tensor's dataset must exist with its shape.
std::vector<float> read_params(const h5::Group& group, const std::vector<TensorInfo>& tensors);

// The state as a group (attributes step, updates, cursor_epoch, cursor_position, loss_scale*,
// experiment_id; params/<tensor>; optimizer/<tensor>/<kind> with the order in optimizer.names).
void write_state(h5::Group& group, const TrainerState& state, const std::vector<TensorInfo>& tensors);
TrainerState read_state(const h5::Group& group, const std::vector<TensorInfo>& tensors);

// A sealed checkpoint file, replaced atomically; read_checkpoint_file checks the seal first.
void write_checkpoint_file(const std::string& path, const TrainerState& state,
                           const std::vector<TensorInfo>& tensors);
TrainerState read_checkpoint_file(const std::string& path, const std::vector<TensorInfo>& tensors);

// Where `--resume` continues a run: the newest checkpoint that is good (sealed, readable, of this
// experiment and layout, its parameter fingerprints equal to the run file's at its step, and
// accepted by `accept` — e.g. Trainer::import_state, which throws when it does not fit) and not
// beyond the run file's rows. None good: step 0, the initialisation.
struct ResumePoint {
  bool finished = false;                   // the run file says the run is finished
  int64_t step = 0;
  std::string source;                      // the checkpoint file, or "" for step 0
  std::vector<std::string> notes;          // each checkpoint passed over, and why
};
ResumePoint find_resume_point(const std::string& run_path, const RunHeader& header,
                              const std::function<void(const TrainerState&)>& accept);

}  // namespace sb::run
