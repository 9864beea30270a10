// FixedAccumulator: the host tensor of fixed-point sums. Every element is independent and every
// operation is integer arithmetic, so OpenMP's split over elements and the SIMD width cannot change
// a bit (tests/unit/test_fixed_accumulator.cpp).
#include "samebits/det/fixed_accumulator.hpp"

#include <cstddef>

#include "samebits/det/error.hpp"

namespace sb::det {

namespace {

// Elements per OpenMP work item: whole SIMD blocks, large enough to amortize scheduling.
constexpr std::ptrdiff_t kChunk = 1 << 14;

uint32_t add_range(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end, const FixedWindow& w) {
#if defined(SB_HAVE_AVX512)
  return detail::fixed_add_range_avx512(limbs, n, x, begin, end, w);
#elif defined(SB_HAVE_AVX2)
  return detail::fixed_add_range_avx2(limbs, n, x, begin, end, w);
#else
  return detail::fixed_add_range_scalar(limbs, n, x, begin, end, w);
#endif
}

}  // namespace

namespace detail {
uint32_t fixed_add_range_scalar(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end,
                                const FixedWindow& w) {
  uint32_t status = 0;
  for (size_t i = begin; i < end; ++i) fixed_add(limbs + i, n, x[i], w, &status);
  return status;
}
}  // namespace detail

FixedAccumulator::FixedAccumulator(size_t n, FixedWindow window) : n_(n), window_(window) {
  SB_CHECK(fixed_window_valid(window), "FixedWindow{lsb_exponent=", window.lsb_exponent, ", limbs=", window.limbs,
           "} is invalid: expected 1..", kFixedMaxLimbs,
           " limbs, lsb_exponent >= -400 and a top exponent lsb_exponent + 32*limbs - 1 in "
           "[-126, 400] (seen ",
           fixed_top_exponent(window), ")");
  limbs_.assign(n * static_cast<size_t>(window.limbs), 0);
}

void FixedAccumulator::add(const float* x) {
  if (pending_ >= kMaxPending) normalize();
  pending_ += 1;
  status_.count_adds(1);
  int64_t* limbs = limbs_.data();
  const size_t n = n_;
  const FixedWindow w = window_;
  const std::ptrdiff_t chunks = (static_cast<std::ptrdiff_t>(n) + kChunk - 1) / kChunk;
  uint32_t status = 0;
#pragma omp parallel for schedule(static) reduction(| : status) if (chunks > 1)
  for (std::ptrdiff_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c * kChunk);
    const size_t end = begin + kChunk < n ? begin + kChunk : n;
    status |= add_range(limbs, n, x, begin, end, w);
  }
  status_.bits |= status;
}

void FixedAccumulator::merge(const FixedAccumulator& other) {
  SB_CHECK(other.n_ == n_ && other.window_.limbs == window_.limbs && other.window_.lsb_exponent == window_.lsb_exponent,
           "FixedAccumulator::merge: expected the same size and window (n=", n_, ", limbs=", window_.limbs,
           ", lsb_exponent=", window_.lsb_exponent, "), seen n=", other.n_, ", limbs=", other.window_.limbs,
           ", lsb_exponent=", other.window_.lsb_exponent);
  if (pending_ + other.pending_ + 1 > kMaxPending) normalize();
  int64_t* dst = limbs_.data();
  const int64_t* src = other.limbs_.data();
  const std::ptrdiff_t count = static_cast<std::ptrdiff_t>(limbs_.size());
#pragma omp parallel for schedule(static) if (count > kChunk)
  for (std::ptrdiff_t i = 0; i < count; ++i) dst[i] += src[i];
  pending_ += other.pending_ + 1;
  if (pending_ > kMaxPending) normalize();
  status_.bits |= other.status_.bits;
  status_.count_adds(other.status_.adds);
}

void FixedAccumulator::normalize() {
  int64_t* limbs = limbs_.data();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(n_);
  const FixedWindow w = window_;
#pragma omp parallel for schedule(static) if (n > kChunk)
  for (std::ptrdiff_t i = 0; i < n; ++i) fixed_normalize(limbs + i, n_, w);
  pending_ = 0;
}

void FixedAccumulator::round_to_fp32(float* out) const {
  const int64_t* limbs = limbs_.data();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(n_);
  const FixedWindow w = window_;
#pragma omp parallel for schedule(static) if (n > kChunk)
  for (std::ptrdiff_t i = 0; i < n; ++i) out[i] = fixed_round_f32(limbs + i, n_, w);
}

void FixedAccumulator::clear() {
  limbs_.assign(limbs_.size(), 0);
  status_.clear();
  pending_ = 0;
}

void FixedAccumulator::finish_allreduce(int ranks, uint64_t total_adds, uint32_t total_status) {
  SB_CHECK(ranks >= 1 && ranks <= kMaxRanks, "FixedAccumulator::finish_allreduce: expected 1..", kMaxRanks,
           " ranks (the int64 headroom of un-normalized limbs), seen ", ranks);
  status_.reduced(total_adds, total_status);
  normalize();
}

void FixedAccumulator::check(const char* what) const {
  check_fixed_status(what, status_.bits, window_,
                     "for overflow, widen the window (more limbs or a higher lsb_exponent).");
}

}  // namespace sb::det
