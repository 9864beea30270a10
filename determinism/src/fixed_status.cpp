// The accumulators' status messages (fixed_status.hpp). Not part of any computation.
#include "samebits/det/fixed_status.hpp"

#include "samebits/det/error.hpp"

namespace sb::det {

std::string fixed_status_names(uint32_t bits) {
  std::string s;
  if (bits & kFixedNaN) s += " NaN";
  if (bits & kFixedInf) s += " Inf";
  if (bits & kFixedOverflow) s += " beyond-the-window";
  return s;
}

void check_fixed_status(const char* what, uint32_t bits, const FixedWindow& window, const char* advice) {
  if (bits == 0) return;
  SB_FAIL(what, ": the fixed-point accumulator refused values (status ", bits, ":", fixed_status_names(bits),
          "); expected finite values below 2^", fixed_top_exponent(window), " and at most ", FixedStatus::kMaxAdds,
          " adds per element. NaN/Inf come from the values "
          "themselves; ",
          advice);
}

}  // namespace sb::det
