// The pipeline group as the model sees it (docs/DISTRIBUTED.md §11): the stages of one replica,
// each running a contiguous range of blocks (the first also the embedding, the last the final
// norm, the head and the loss). Activations and their gradients pass stage to stage bit for bit,
// so the group adds no arithmetic; parallel/ implements it over a Communicator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "samebits/core/gpt_shape.hpp"

namespace sb {

// The wall time of the pipeline flushes a stage ran (accumulate_pipelined) and the part of it the
// stage spent in send, recv and exchange — waiting for a neighbour, or moving its message: the
// stage's idle time, the pipeline bubble's measure (bench/bench_bubble.py). Seconds, since the
// group was made.
struct PipeTimes {
  double flush = 0;
  double blocked = 0;
};

class PipeGroup {
 public:
  virtual ~PipeGroup() = default;
  PipeTimes times;                // kept by the schedule (pipeline_schedule.cpp)
  virtual int stage() const = 0;  // 0 … stages()-1
  virtual int stages() const = 0;
  // Blocking point-to-point with another stage of the same replica: x (n) to stage `to`; x (n)
  // from stage `from`. Backend memory.
  virtual void send(const float* x, size_t n, int to) = 0;
  virtual void recv(float* x, size_t n, int from) = 0;
  // out (n_out) to stage `to` while in (n_in) arrives from stage `from`, as one exchange that
  // cannot deadlock against the neighbour's (MPI_Sendrecv): 1F1B's steady state.
  virtual void exchange(const float* out, size_t n_out, int to, float* in, size_t n_in, int from) = 0;
};

// The blocks of stage `stage` of `stages`: [first, end).
struct StageBlocks {
  int first = 0;
  int end = 0;
};
StageBlocks stage_blocks(const GPTConfig& cfg, int stages, int stage);

// Whether stage `stage` of `stages` holds tensor `name` (gpt_param_layout's names): its blocks'
// tensors, wte and wpe on the first stage, the final norm and lm_head.w on the last — and wte on
// the last too when the head is tied (the head's copy, as Megatron's last stage holds one).
bool stage_holds(const GPTConfig& cfg, int stages, int stage, const std::string& name);

// Throws sb::Error naming parallel.pp when the model's blocks do not split into pp equal stages.
void validate_pp(const GPTConfig& cfg, int64_t pp);

}  // namespace sb
