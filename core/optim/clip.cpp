// Global-norm clipping and per-tensor gradient statistics (clip.hpp): exact sums, order-free
// maxima, one fp32 multiply per clipped element (on the optimizers' kernels).
#include "samebits/core/optim/clip.hpp"

#include "samebits/core/exact_norm.hpp"

namespace sb {

float clip_factor(float norm, double clip) {
  if (!(clip > 0.0) || !(norm < det::float_of_bits(0x7f800000u))) return 1.0f;
  const double f = clip / (static_cast<double>(norm) + kClipNormEps);
  return f < 1.0 ? static_cast<float>(f) : 1.0f;
}

ClipResult clip_grad_norm(OptimKernels& kernels, float* grads, size_t n, double clip) {
  const float norm = sqrt_rounded(kernels.sum_of_squares(grads, n));
  const float factor = clip_factor(norm, clip);
  if (factor < 1.0f) kernels.scale(grads, n, factor);
  return {norm, factor};
}

GradStats grad_stats(const float* g, size_t n) {
  GradStats s;
  s.norm = norm2(g, n);
  s.max_abs = max_abs(g, n);
  s.mean = static_cast<float>(exact_sum(g, n).to_f64() / static_cast<double>(n));
  return s;
}

std::vector<GradStats> grad_stats(const float* grads, const std::vector<ParamView>& params) {
  std::vector<GradStats> out;
  out.reserve(params.size());
  for (const ParamView& p : params) out.push_back(grad_stats(grads + p.offset, p.numel));
  return out;
}

}  // namespace sb
