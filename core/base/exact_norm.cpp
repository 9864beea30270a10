// Exact reductions over host arrays (exact_norm.hpp): binned exact sums per block of
// kReduceBlock, one det::ExactSum per OpenMP thread over a static partition of the blocks, merged
// exactly, so the result does not depend on the thread count (nor on the block size: every sum is
// exact); max |x| by
// an integer max over the sign-cleared bits, which is order-free.
#include "samebits/core/exact_norm.hpp"

#include <algorithm>

namespace sb {

namespace {

constexpr ptrdiff_t kParallelMin = 16384;  // below this, one thread (the result is the same)
// Blocks of the exact sums: a quarter of kBinnedBlock, so that Newton–Schulz's norms of 2^14 to
// 2^16 elements share out over threads too.
constexpr size_t kReduceBlock = kBinnedBlock / 4;

// f over the blocks of kReduceBlock elements of x on OpenMP threads (a static partition), each
// thread's results merged into its own ExactSum and those merged exactly: the same exact value
// for any thread count.
det::ExactSum reduce_blocks(const float* x, size_t n, det::ExactSum (*f)(const float*, size_t)) {
  det::ExactSum total;
  const ptrdiff_t blocks = static_cast<ptrdiff_t>((n + kReduceBlock - 1) / kReduceBlock);
#pragma omp parallel if (blocks > 1)
  {
    det::ExactSum local;
#pragma omp for schedule(static) nowait
    for (ptrdiff_t b = 0; b < blocks; ++b) {
      const size_t begin = static_cast<size_t>(b) * kReduceBlock;
      local.merge(f(x + begin, std::min(n - begin, kReduceBlock)));
    }
#pragma omp critical(sb_exact_reduce)
    total.merge(local);
  }
  return total;
}

}  // namespace

det::ExactSum sum_of_squares(const float* x, size_t n) { return reduce_blocks(x, n, binned_sum_of_squares); }

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
