// The primitives' invariance checks, run by `samebits selftest` (and at the start of a run's
// self-description). Each check is quick (well under a second) and returns what it measured.
#pragma once
#include <string>
#include <vector>

namespace sb::det {

struct SelftestResult {
  std::string name;  // the primitive, e.g. "philox"
  bool ok = false;
  std::string detail;  // what was checked and measured, one line
};

// One check per primitive, each defined beside its primitive in determinism/src/.
SelftestResult selftest_fp_env();
SelftestResult selftest_fp_formats();
SelftestResult selftest_math();
SelftestResult selftest_philox();
SelftestResult selftest_exact_sum();
SelftestResult selftest_fixed_accumulator();
SelftestResult selftest_lane32();
SelftestResult selftest_fingerprint();

// All of the above, in that order; never throws (an exception becomes a failed result).
std::vector<SelftestResult> run_selftests();

}  // namespace sb::det
