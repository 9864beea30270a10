// Global gradient-norm clipping and the per-tensor gradient statistics the trainer records.
// Contract (docs/CONTRACT.md rule 5): every sum is exact (det::ExactSum of squares computed exactly
// in fp64) and rounded once, every max is order-free, so results are independent of threads and
// partitions. Pointers are host memory unless stated; shapes in comments.
#pragma once
#include <cstddef>
#include <vector>

#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb {

// The clip rule's added constant: factor = min(1, clip / (norm + kClipNormEps)) (PyTorch's
// clip_grad_norm_ convention).
constexpr double kClipNormEps = 1e-6;

// The factor of the clip rule for this norm: fl32(clip / (fl64(norm) + 1e-6)) in fp64 when that
// is below 1, else exactly 1. 1 when clip ≤ 0 (clipping off) or the norm is not finite (the
// step's overflow handling decides what happens then).
float clip_factor(float norm, double clip);

struct ClipResult {
  float norm;    // the global norm before clipping
  float factor;  // the factor applied (1: untouched)
};

// norm, factor; then grads[i] ← fl32(grads[i] · factor) when factor < 1 (one multiply per
// element), where the optimizers' kernels compute (optim_kernels.hpp): the exact sum of squares
// and the multiplies on the kernels' backend, every backend's bitwise the host's
// (host_optim_kernels() for host memory).  grads: (n), that backend's memory
ClipResult clip_grad_norm(OptimKernels& kernels, float* grads, size_t n, double clip);

// One tensor's gradient statistics.
struct GradStats {
  float norm;     // √(Σ g²): exact sum, correctly rounded to fp32
  float max_abs;  // max |g| (exact in any order; NaN when any element is NaN)
  float mean;     // fl32(fl64(Σ g) / numel): exact sum rounded to fp64, one fp64 division
};

// Statistics of one tensor.  g: (n)
GradStats grad_stats(const float* g, size_t n);
// Statistics of every tensor of the layout, in layout order.  grads: (flat_size)
std::vector<GradStats> grad_stats(const float* grads, const std::vector<ParamView>& params);

}  // namespace sb
