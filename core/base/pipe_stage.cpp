// The blocks and tensors of a pipeline stage (pipe_group.hpp): Megatron's even split of n_layer
// into contiguous ranges. No arithmetic on values.
#include "samebits/core/pipe_group.hpp"

#include <string>

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

bool stage_holds(const GPTConfig& cfg, int stages, int stage, const std::string& name) {
  const bool first = stage == 0, last = stage == stages - 1;
  if (name == "wte") return first || (last && cfg.tied_head);
  if (name == "wpe") return first;
  if (name.rfind("h.", 0) != 0) return last;  // lnf.w, lnf.b, lm_head.w
  const StageBlocks b = stage_blocks(cfg, stages, stage);
  const int layer = std::stoi(name.substr(2));
  return layer >= b.first && layer < b.end;
}

}  // namespace sb
