// The bookkeeping every fixed-point gradient accumulator keeps beside its sums, written once for
// det::FixedAccumulator, det::BlockAccumulator and the CUDA backend's accumulator: the gradient
// window, the status bits (kFixed*, fixed_point.hpp), the add count and its limit, and the one
// wording of their messages.
// Integer bookkeeping only: nothing here touches a value.
#pragma once
#include <stdint.h>

#include <string>

#include "samebits/det/fixed_point.hpp"

namespace sb::det {

// The window of the training gradient's accumulators (FixedAccumulator's default, the frame of
// block_wire.hpp): the CPU's BlockAccumulator and the CUDA backend's limbs use this one.
inline constexpr FixedWindow kGradientWindow{};

struct FixedStatus {
  // Total values per element, over every add, merge and rank: each moves the top limb by < 2^31,
  // so the top stays below 2^61 (+ 2^31 of carries over 2^20 ranks). Beyond it, kFixedOverflow.
  static constexpr uint64_t kMaxAdds = uint64_t{1} << 30;

  uint32_t bits = 0;  // kFixed* bits: sticky until clear()
  uint64_t adds = 0;  // values added per element, summed over merges and ranks

  void count_adds(uint64_t more) {
    adds += more;
    if (adds > kMaxAdds) bits |= kFixedOverflow;
  }
  void clear() { bits = 0, adds = 0; }
  // After an all-reduce: the reduced bits (BOR) and add count (SUM) replace this rank's.
  void reduced(uint64_t total_adds, uint32_t total_bits) {
    adds = 0;
    bits = total_bits;
    count_adds(total_adds);
  }
};

// The set bits by name, each after a space: " NaN Inf beyond-the-window" (kFixedOverflow last).
std::string fixed_status_names(uint32_t bits);

// Throws sb::Error naming `what` when `bits` is non-zero: which values were refused, the window's
// top exponent and the add limit, then `advice` (what to do about an overflow).
void check_fixed_status(const char* what, uint32_t bits, const FixedWindow& window, const char* advice);

// The advice of the accumulators of training gradients (the window is fixed there).
inline constexpr const char* kGradientOverflowAdvice =
    "overflow means a gradient of 2^27 or more: lower the learning rate or the loss scale.";

}  // namespace sb::det
