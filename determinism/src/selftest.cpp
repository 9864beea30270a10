// run_selftests: every primitive's invariance check, exceptions turned into failures.
#include "samebits/det/selftest.hpp"

#include <exception>

namespace sb::det {

std::vector<SelftestResult> run_selftests() {
  using Check = SelftestResult (*)();
  const struct {
    const char* name;
    Check check;
  } checks[] = {
      {"fp_env", selftest_fp_env},       {"fp_formats", selftest_fp_formats},
      {"math", selftest_math},           {"philox", selftest_philox},
      {"exact_sum", selftest_exact_sum}, {"fixed_accumulator", selftest_fixed_accumulator},
      {"lane32", selftest_lane32},       {"fingerprint", selftest_fingerprint},
  };
  std::vector<SelftestResult> results;
  for (const auto& c : checks) {
    try {
      results.push_back(c.check());
    } catch (const std::exception& e) {
      results.push_back({c.name, false, std::string("threw: ") + e.what()});
    }
  }
  return results;
}

}  // namespace sb::det
