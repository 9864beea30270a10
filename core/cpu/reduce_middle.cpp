// Reductions of a middle dimension on the CPU (host_ops.hpp): rows in the 32-lane form, strided
// columns as chains over k ascending (ops/pointwise.hpp's steps); OpenMP over outputs.
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::cpu {
namespace {

// One row of K contiguous values: the 32-lane form for the sums, the max in any order.
float row(Reduction r, const float* x, int64_t K) {
  const size_t n = static_cast<size_t>(K);
  if (r == Reduction::sum) return det::lane32_sum(x, n);
  if (r == Reduction::sumsq) return det::lane32_dot(x, x, n);
  if (ops::reduction_in_lanes(r)) {
    float s[det::kLanes] = {};
    for (size_t i = 0; i < n; ++i) s[i % det::kLanes] = ops::reduction_step(r, s[i % det::kLanes], x[i]);
    return det::lane32_fold(s);
  }
  float acc = ops::reduction_start(r);
  for (size_t i = 0; i < n; ++i) acc = ops::reduction_step(r, acc, x[i]);
  return acc;
}

}  // namespace

void reduce_middle(Reduction r, float* out, const float* inp, int64_t outer, int64_t K, int64_t inner) {
  if (inner == 1) {
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outer; ++o) out[o] = row(r, inp + o * K, K);
    return;
  }
  // Each output (o, i) the chain over k ascending; a block of consecutive i per task.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < outer * blocks; ++t) {
    const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, i1 = i0 + kBlock < inner ? i0 + kBlock : inner;
    float* y = out + o * inner;
    for (int64_t i = i0; i < i1; ++i) y[i] = ops::reduction_start(r);
    for (int64_t k = 0; k < K; ++k) {
      const float* x = inp + (o * K + k) * inner;
      for (int64_t i = i0; i < i1; ++i) y[i] = ops::reduction_step(r, y[i], x[i]);
    }
  }
}

}  // namespace sb::cpu
