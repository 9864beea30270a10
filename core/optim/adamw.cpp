// AdamW (adamw.hpp): fp64 constants per tensor and step on the host, then ops::adamw_update per
// element where the backend keeps the state (optim_kernels.hpp: OpenMP loops or CUDA kernels;
// elements are independent, so the same bits on any thread count or launch configuration).
#include "samebits/core/optim/adamw.hpp"

#include <limits>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"
#include "tensor_state.hpp"

namespace sb {

using optim_detail::TensorState;

AdamWOptions adamw_options(const OptimConfig& optim) {
  return {optim.lr, optim.weight_decay, optim.adam_betas, optim.adam_eps};
}

double pow_int(double x, int64_t t) {
  double result = 1.0;
  double base = x;
  while (t > 0) {
    if (t & 1) result *= base;
    t >>= 1;
    if (t > 0) base *= base;
  }
  return result;
}

ops::AdamWConstants adamw_constants(const AdamWOptions& options, double lr_factor, int64_t step, bool decay) {
  SB_CHECK(step >= 1, "AdamW: StepContext::step counts updates from 1 (bias correction), got ", step);
  const double lr = scheduled_lr(options.lr, lr_factor);
  const double b1 = options.betas[0], b2 = options.betas[1];
  const double bc1 = 1.0 - pow_int(b1, step);
  const double bc2 = 1.0 - pow_int(b2, step);
  ops::AdamWConstants k;
  k.beta1 = static_cast<float>(b1);
  k.one_minus_beta1 = static_cast<float>(1.0 - b1);
  k.beta2 = static_cast<float>(b2);
  k.one_minus_beta2 = static_cast<float>(1.0 - b2);
  k.eps = static_cast<float>(options.eps);
  k.step_size = static_cast<float>(lr / bc1);
  k.bc2_sqrt = static_cast<float>(sqrt_f64(bc2));
  k.decay = decay ? static_cast<float>(1.0 - lr * options.weight_decay) : 1.0f;
  return k;
}

class AdamW::Impl {
 public:
  Impl(const std::vector<ParamView>& params, Backend& backend)
      : state(params, backend, std::vector<std::vector<std::string>>(params.size(), {"exp_avg", "exp_avg_sq"})) {}
  TensorState state;
};

AdamW::AdamW(const std::vector<ParamView>& params, Backend& backend, const AdamWOptions& options) : options_(options) {
  impl_ = std::make_unique<Impl>(params, backend);
}

AdamW::~AdamW() = default;

void AdamW::step(float* weights, const float* grads, const StepContext& ctx) {
  TensorState& st = impl_->state;
  const std::vector<ParamView>& params = st.params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!st.owned(i)) continue;
    const ParamView& p = params[i];
    const ops::AdamWConstants k = adamw_constants(options_, ctx.lr_factor, ctx.step, decays_weight(p));
    UpdateSums sums;
    const trace::Scope site(st.backend(), "adamw ", -1, p.name.c_str());
    st.kernels().adamw(weights + p.offset, grads + p.offset, st.buffer(i, 0), st.buffer(i, 1), p.numel, k,
                       ctx.compute_stats ? &sums : nullptr);
    st.stats()[i] = ctx.compute_stats ? sums.finish(p.numel, std::numeric_limits<float>::quiet_NaN())
                                      : optim_detail::not_computed();
  }
}

std::vector<StateBuffer> AdamW::state() { return impl_->state.state(); }
size_t AdamW::state_bytes() const { return impl_->state.bytes(); }
const std::vector<TensorUpdateStats>& AdamW::last_stats() const { return impl_->state.stats(); }
void AdamW::set_owned(const std::vector<bool>& owned) { impl_->state.set_owned(owned); }

std::vector<double> AdamW::update_cost() const { return adamw_update_cost(impl_->state.params()); }

std::vector<double> adamw_update_cost(const std::vector<ParamView>& params) {
  std::vector<double> cost;
  for (const ParamView& p : params) cost.push_back(static_cast<double>(p.numel));
  return cost;
}

}  // namespace sb
