// Training steps with the model on any backend and the optimizer on the host: the Trainer's step
// (leaves in order, each leaf's gradient added exactly on the model's backend, one rounding, exact
// clipping, the optimizer update, DESIGN.md §1.1 rules 4-5) without statistics, validation or
// loss scaling. The optimizers run their elementwise loops on host memory (core/optim), so on a
// CUDA backend this is what a GPU training step is today: every model op and the accumulation on
// the GPU, the update on the host. Used by the parity tests and by parity_train (scripts/gpu-check).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/token_source.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::test {

// One step's bits: the loss, the batch gradient (before clipping) and the weights after the update.
struct StepBits {
  uint32_t loss;
  uint64_t grad;                       // fingerprint of the flat gradient
  uint64_t weights;                    // fingerprint of the flat weights
  std::vector<uint64_t> param_prints;  // per tensor, layout order (as StepResult's)
  bool operator==(const StepBits& o) const {
    return loss == o.loss && grad == o.grad && weights == o.weights && param_prints == o.param_prints;
  }
};

// `steps` steps of `config` (fp32 or bf16; fp16 needs the Trainer's loss scaling) with the GPT on
// `model_backend`, whose numerics are set from the config.
inline std::vector<StepBits> hybrid_train(const Config& config, Backend& model_backend, int steps) {
  SB_CHECK(config.train.precision != Precision::fp16,
           "hybrid_train has no fp16 loss scaling; use train.precision=fp32 or bf16");
  const int leaf_size = static_cast<int>(config.data.leaf_size);
  const int leaves = static_cast<int>(config.data.leaves);
  model_backend.set_numerics(to_numerics(config));
  const std::unique_ptr<data::TokenSource> source =
      data::open_source(to_data_config(config), data::Split::train);
  const data::Sampler sampler(*source, config.model.seq_len, leaf_size, leaves, config.data.seed);
  GPT model(config.model, leaf_size, model_backend);
  model.init(config.train.seed);
  const std::unique_ptr<Backend> host = make_cpu_backend(to_numerics(config));
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer(config.optim, model.params(), *host, config.train.precision);
  const std::unique_ptr<GradAccumulator> acc = model_backend.make_accumulator(model.flat_size());
  const size_t flat = model.flat_size();
  Tensor grad = model_backend.alloc(DType::f32, {static_cast<int64_t>(flat)});
  std::vector<float> w(flat), g(flat);  // (flat) host weights and gradient
  model_backend.copy_to_host(w.data(), model.weights().data(), flat * sizeof(float));
  std::vector<int32_t> tokens(static_cast<size_t>(leaf_size) * (config.model.seq_len + 1));

  std::vector<StepBits> out;
  for (int s = 0; s < steps; ++s) {
    acc->clear();
    det::ExactSum loss_sum;
    for (int l = 0; l < leaves; ++l) {
      sampler.leaf(static_cast<uint64_t>(s), l, tokens.data());
      model.forward(tokens.data());
      model.backward(1.0f);
      acc->add(model.grads().data_as<float>());
      loss_sum.merge(model.loss_sum());
    }
    acc->round(grad.data_as<float>(), static_cast<float>(leaves));
    model_backend.copy_to_host(g.data(), grad.data(), flat * sizeof(float));
    StepBits bits;
    bits.loss = det::bits_of(mean_loss(loss_sum, static_cast<int64_t>(leaves) * model.leaf_tokens()));
    bits.grad = det::fingerprint(g.data(), flat);
    clip_grad_norm(g.data(), flat, config.optim.clip);
    StepContext ctx;
    ctx.step = s + 1;
    ctx.lr_factor = lr_factor(config.train, s + 1);
    ctx.muon_momentum = muon_momentum(config.optim, s + 1);
    ctx.compute_stats = false;
    optimizer->step(w.data(), g.data(), ctx);
    model_backend.copy_from_host(model.weights().data(), w.data(), flat * sizeof(float));
    bits.weights = det::fingerprint(w.data(), flat);
    for (const ParamView& p : model.params())
      bits.param_prints.push_back(det::fingerprint(w.data() + p.offset, p.numel));
    out.push_back(std::move(bits));
  }
  return out;
}

}  // namespace sb::test
