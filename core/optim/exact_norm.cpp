// Exact reductions over host arrays (exact_norm.hpp): one det::ExactSum per OpenMP thread over a
// static partition, merged exactly, so the result does not depend on the thread count; max |x| by
// an integer max over the sign-cleared bits, which is order-free.
#include "samebits/core/optim/exact_norm.hpp"

#include <algorithm>

namespace sb {

namespace {

constexpr ptrdiff_t kParallelMin = 16384;  // below this, one thread (the result is the same)

template <class Term>
det::ExactSum reduce_exact(const float* x, size_t n, const Term& term) {
  det::ExactSum total;
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
#pragma omp parallel if (count >= kParallelMin)
  {
    det::ExactSum local;
#pragma omp for schedule(static) nowait
    for (ptrdiff_t i = 0; i < count; ++i) local.add(term(x[i]));
#pragma omp critical(sb_exact_reduce)
    total.merge(local);
  }
  return total;
}

}  // namespace

det::ExactSum sum_of_squares(const float* x, size_t n) {
  return reduce_exact(x, n, [](float v) { return exact_square(v); });
}

det::ExactSum exact_sum(const float* x, size_t n) {
  return reduce_exact(x, n, [](float v) { return v; });
}

float max_abs(const float* x, size_t n) {
  // For |x| the fp32 bit patterns order like the values; NaNs lie above +Inf.
  uint32_t best = 0;
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
#pragma omp parallel for schedule(static) reduction(max : best) if (count >= kParallelMin)
  for (ptrdiff_t i = 0; i < count; ++i) best = std::max(best, det::bits_of(x[i]) & 0x7fffffffu);
  return best > 0x7f800000u ? det::float_of_bits(0x7fc00000u) : det::float_of_bits(best);
}

float norm2(const float* x, size_t n) { return sqrt_rounded(sum_of_squares(x, n)); }

}  // namespace sb
