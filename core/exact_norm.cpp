// Exact reductions over host arrays (exact_norm.hpp): binned exact sums per block of
// kBinnedBlock, one det::ExactSum per OpenMP thread over a static partition of the blocks, merged
// exactly, so the result does not depend on the thread count; max |x| by
// an integer max over the sign-cleared bits, which is order-free.
#include "samebits/core/exact_norm.hpp"

#include <algorithm>

namespace sb {

namespace {

constexpr ptrdiff_t kParallelMin = 16384;  // below this, one thread (the result is the same)

// f over the blocks of kBinnedBlock elements of x on OpenMP threads (a static partition), each
// thread's results merged into its own ExactSum and those merged exactly: the same exact value
// for any thread count.
det::ExactSum reduce_blocks(const float* x, size_t n, det::ExactSum (*f)(const float*, size_t)) {
  det::ExactSum total;
  const ptrdiff_t blocks = static_cast<ptrdiff_t>((n + kBinnedBlock - 1) / kBinnedBlock);
#pragma omp parallel if (static_cast<ptrdiff_t>(n) >= kParallelMin)
  {
    det::ExactSum local;
#pragma omp for schedule(static) nowait
    for (ptrdiff_t b = 0; b < blocks; ++b) {
      const size_t begin = static_cast<size_t>(b) * kBinnedBlock;
      local.merge(f(x + begin, std::min(n - begin, kBinnedBlock)));
    }
#pragma omp critical(sb_exact_reduce)
    total.merge(local);
  }
  return total;
}

}  // namespace

det::ExactSum sum_of_squares(const float* x, size_t n) {
  return reduce_blocks(x, n, binned_sum_of_squares);
}

det::ExactSum exact_sum(const float* x, size_t n) { return reduce_blocks(x, n, binned_sum); }

float max_abs(const float* x, size_t n) {
  uint32_t best = 0;
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
#pragma omp parallel for schedule(static) reduction(max : best) if (count >= kParallelMin)
  for (ptrdiff_t i = 0; i < count; ++i) best = std::max(best, abs_bits(x[i]));
  return max_abs_of_bits(best);
}

float norm2(const float* x, size_t n) { return sqrt_rounded(sum_of_squares(x, n)); }

}  // namespace sb
