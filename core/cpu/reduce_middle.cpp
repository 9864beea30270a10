// Reductions of a middle dimension on the CPU (host_ops.hpp): rows in the 32-lane form, strided
// columns as chains over k ascending (token_reduce's, ops/pointwise.hpp's steps); OpenMP over outputs.
#include <cstdint>

#include "cpu_backend_class.hpp"
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/det/error.hpp"
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
  // Each output (o, i) the chain over k ascending (token_reduce's columns, one fork/join for all o).
  SB_CHECK(K <= INT32_MAX && inner <= INT32_MAX, "reduce_middle: ", K, " x ", inner, " beyond int indices");
  const float start = ops::reduction_start(r);
#pragma omp parallel
  for (int64_t o = 0; o < outer; ++o) {
    const float* x = inp + o * K * inner;
    token_reduce_canonical_nowait(
        out + o * inner, static_cast<int>(K), static_cast<int>(inner), [=](float acc, int k, int c) {
          return ops::reduction_step(r, k == 0 ? start : acc, x[static_cast<size_t>(k) * inner + c]);
        });
  }
}

}  // namespace sb::cpu
