// A training run's state as plain data: what a checkpoint holds and every layer that moves it
// reads or writes (the trainer exports and imports it, the run store saves it, the parallel layer
// broadcasts it). Contract: these values are all a run needs to continue bitwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "samebits/data/sampler.hpp"

namespace sb {

// The dynamic fp16 loss scale's state (optim/loss_scale.hpp).
struct LossScaleState {
  double scale = 65536.0;     // the current scale (a power of two)
  int64_t good_steps = 0;     // overflow-free steps since the last change of scale
  int64_t skipped_steps = 0;  // steps skipped for overflow since the start of the run
};

// A named host copy of one optimizer state buffer (Optimizer::state() order). The trainer's own
// arrays follow: under train.schedule = adaptive kAdaptiveStateName, the schedule's two fp64 EMAs
// (optim/adaptive_lr.hpp), their bits carried in four fp32 slots; under model.moe_bias_rate > 0
// kMoeBiasStateName, the MoE routers' auxiliary-loss-free biases (MoE blocks × experts).
struct StateArray {
  std::string name;         // "<tensor>/<kind>", e.g. "h.0.attn.qkv.w/momentum"
  std::vector<float> data;  // (numel)
};
inline constexpr const char* kAdaptiveStateName = "schedule/adaptive_ema";
inline constexpr const char* kMoeBiasStateName = "moe/router_bias";
inline bool is_trainer_array(const std::string& name) {
  return name == kAdaptiveStateName || name == kMoeBiasStateName;
}

// Everything needed to continue a run bitwise: a checkpoint's content. There is no RNG state:
// initialisation and data order are counter-based (Philox keyed by seeds, streams named per
// tensor; the sampler a pure function of the step), so (step, cursor) is all the "randomness".
struct TrainerState {
  int64_t step = 0;            // steps completed
  int64_t updates = 0;         // optimizer updates applied (fewer after skipped fp16 steps)
  data::DataCursor cursor;     // where step `step` begins in the data (Sampler::cursor)
  std::vector<float> weights;  // (flat_size) flat parameters, padding included
  std::vector<StateArray> optimizer;
  LossScaleState loss_scale;  // fp16 only; the default elsewhere
  std::string experiment_id;  // experiment_id(config) of the run that wrote it
};

// A state's arrays read one at a time, for a checkpoint written without a whole copy of the model
// (a pipeline's rank 0 holds its stage and one other array): the count of tensors, the optimizer
// arrays' names and lengths, and a fetch per array. A fetch's pointer stays valid until the next
// fetch; arrays may be fetched in any order, each at most once.
struct StateParts {
  size_t tensors = 0;              // weights(t) for t < tensors: the full layout's tensors, in order
  std::vector<std::string> names;  // the optimizer arrays (StateArray::name), in order
  std::vector<uint64_t> sizes;     // their lengths
  std::function<const float*(size_t tensor)> weights;  // the tensor's numel values
  std::function<const float*(size_t array)> array;     // sizes[array] values
};

}  // namespace sb
