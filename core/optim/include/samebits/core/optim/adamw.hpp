// AdamW (Loshchilov & Hutter 2019) with torch.optim.AdamW's conventions: bias correction,
// decoupled weight decay applied as W·(1 − lr·wd) before the step, ε added outside the √.
// Weight decay only on tensors of two or more dimensions (nanoGPT's rule: matrices, embeddings
// and the untied head; never norm gains or biases). Contract: every element is ops::adamw_update
// with constants from adamw_constants — the same bits on any thread count, rank split or backend.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "samebits/core/ops/adamw.hpp"
#include "samebits/core/optim/optimizer.hpp"

namespace sb {

struct AdamWOptions {
  double lr = 3e-3;           // peak learning rate (times StepContext::lr_factor)
  double weight_decay = 0.0;  // decoupled, on tensors with decays_weight()
  std::array<double, 2> betas{0.9, 0.95};
  double eps = 1e-8;
};

// AdamW with lr = optim.lr, weight_decay, betas = adam_betas, eps = adam_eps (name = adamw).
AdamWOptions adamw_options(const OptimConfig& optim);

// nanoGPT's decay rule: a tensor of two or more dimensions.
inline bool decays_weight(const ParamView& p) { return p.shape.size() >= 2; }

// The fp32 constants of one AdamW update, derived in fp64 and rounded once each:
//   lr = fl64(options.lr · lr_factor); β^t by binary powering (exact sequence of fp64 products);
//   step_size = fl32(lr / (1 − β1^t)); bc2_sqrt = fl32(√(1 − β2^t));
//   decay = fl32(1 − lr·wd) when `decay` else 1; β, 1 − β and ε rounded from fp64.
ops::AdamWConstants adamw_constants(const AdamWOptions& options, double lr_factor, int64_t step, bool decay);

// x^t for t ≥ 0 by binary powering in fp64 (squares and products in a fixed sequence: no libm).
double pow_int(double x, int64_t t);

// AdamW::update_cost of a layout: each tensor's element count.
std::vector<double> adamw_update_cost(const std::vector<ParamView>& params);

// AdamW on every tensor of the layout; state "exp_avg" and "exp_avg_sq" per owned tensor.
class AdamW final : public Optimizer {
 public:
  AdamW(const std::vector<ParamView>& params, Backend& backend, const AdamWOptions& options);
  ~AdamW() override;

  void step(float* weights, const float* grads, const StepContext& ctx) override;
  std::vector<StateBuffer> state() override;
  size_t state_bytes() const override;
  const std::vector<TensorUpdateStats>& last_stats() const override;
  void set_owned(const std::vector<bool>& owned) override;
  std::vector<double> update_cost() const override;

  const AdamWOptions& options() const { return options_; }

 private:
  class Impl;
  AdamWOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sb
