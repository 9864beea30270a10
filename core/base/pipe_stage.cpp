// The blocks of a pipeline stage (pipe_group.hpp): Megatron's even split of n_layer into
// contiguous ranges. No arithmetic on values.
#include "samebits/core/pipe_group.hpp"
#include "samebits/det/error.hpp"

namespace sb {

void validate_pp(const GPTConfig& cfg, int64_t pp) {
  SB_CHECK(pp >= 1 && pp <= 4096, "config parallel.pp=", pp, " must be between 1 and 4096");
  SB_CHECK(cfg.n_layer % pp == 0, "config model.n_layer=", cfg.n_layer, " is not divisible by parallel.pp=", pp,
           ": pipeline parallelism gives each stage the same number of blocks; choose parallel.pp dividing n_layer");
}

StageBlocks stage_blocks(const GPTConfig& cfg, int stages, int stage) {
  validate_pp(cfg, stages);
  SB_CHECK(stage >= 0 && stage < stages, "pipeline stage ", stage, " outside [0, ", stages, ")");
  const int per = cfg.n_layer / stages;
  return {stage * per, (stage + 1) * per};
}

}  // namespace sb
