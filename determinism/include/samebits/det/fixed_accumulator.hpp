// FixedAccumulator: a host tensor of fixed-point sums (docs/CONTRACT.md rule 4) — the exact gradient
// sum across leaves, ranks and accumulation steps. add, merge and normalize are integer operations,
// so any partition, order, thread count or SIMD width gives the same limbs and the same rounding.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "samebits/det/fixed_point.hpp"
#include "samebits/det/fixed_status.hpp"

namespace sb::det {

class FixedAccumulator {
 public:
  // Adds (and merges) between two carry propagations. The bound keeps every limb below
  // (kMaxPending + 1)·2^32 = 2^42, so a SUM all-reduce of up to 2^20 un-normalized accumulators
  // (2^62) cannot overflow int64.
  static constexpr uint32_t kMaxPending = 1023;
  // Total values per element (fixed_status.hpp); beyond it, status() reports kFixedOverflow.
  static constexpr uint64_t kMaxAdds = FixedStatus::kMaxAdds;
  // Ranks a SUM all-reduce may combine (see finish_allreduce).
  static constexpr int kMaxRanks = 1 << 20;

  explicit FixedAccumulator(size_t n, FixedWindow window = FixedWindow{});

  // this[i] += x[i] for i < n (x: (n)); OpenMP over elements, AVX-512/AVX2 when built with them.
  void add(const float* x);
  // this += other (same n and window): limb-wise integer addition, i.e. what an int64 SUM
  // all-reduce does; status and add counts combine too.
  void merge(const FixedAccumulator& other);
  // Carry propagation to the canonical limbs (limbs 0..L-2 in [0, 2^32), the top signed): a
  // function of the exact sums only, whatever partition produced them.
  void normalize();
  // out[i] = the exact sum of element i rounded to fp32, to nearest with ties to even (out: (n)).
  // Zero sums give +0. Call status() to learn whether any value was refused.
  void round_to_fp32(float* out) const;
  // Back to zero, status cleared.
  void clear();

  // Raw limbs for an all-reduce (limbs: (limbs, n), limb-major: limb j of element i at [j·n + i]).
  // Protocol: MPI_Allreduce(IN_PLACE, limbs(), limb_count(), MPI_INT64_T, MPI_SUM) (or ncclInt64
  // ncclSum), all-reduce adds() with SUM and status() with BOR, then finish_allreduce(...).
  int64_t* limbs() { return limbs_.data(); }
  const int64_t* limbs() const { return limbs_.data(); }
  size_t limb_count() const { return limbs_.size(); }
  // After the limbs were replaced by the SUM over `ranks` accumulators: record the reduced add
  // count and status, and normalize. ranks must be in [1, kMaxRanks].
  void finish_allreduce(int ranks, uint64_t total_adds, uint32_t total_status);

  size_t size() const { return n_; }
  const FixedWindow& window() const { return window_; }
  uint32_t status() const { return status_.bits; }  // kFixed* bits: sticky until clear()
  bool overflowed() const { return (status_.bits & kFixedOverflow) != 0; }
  uint64_t adds() const { return status_.adds; }  // add() calls summed over merges and ranks
  // Throws sb::Error naming `what` when any status bit is set (overflow, NaN or Inf added).
  void check(const char* what) const;

 private:
  size_t n_;
  FixedWindow window_;
  std::vector<int64_t> limbs_;  // (limbs, n) limb-major
  FixedStatus status_;
  uint32_t pending_ = 0;  // adds and merges since the last normalize
};

namespace detail {
// The add loop over elements [begin, end) of x (x: (n)), limbs: (limbs, n); returns status bits.
// Each SIMD version gives the same limbs as the scalar one (tests/unit/test_fixed_accumulator.cpp).
uint32_t fixed_add_range_scalar(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end,
                                const FixedWindow& w);
#if defined(SB_HAVE_AVX2)
uint32_t fixed_add_range_avx2(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end, const FixedWindow& w);
#endif
#if defined(SB_HAVE_AVX512)
uint32_t fixed_add_range_avx512(int64_t* limbs, size_t n, const float* x, size_t begin, size_t end,
                                const FixedWindow& w);
#endif
}  // namespace detail

}  // namespace sb::det
