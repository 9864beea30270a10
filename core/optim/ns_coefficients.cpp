// Selection of the Newton–Schulz coefficient table of a config (ns_coefficients.hpp). Pure data.
#include "samebits/core/optim/ns_coefficients.hpp"

#include <algorithm>

#include "samebits/det/error.hpp"

namespace sb {

std::vector<NsStep> ns_schedule(const OptimConfig& config) {
  SB_CHECK(config.ns_steps >= 1, "config optim.ns_steps=", config.ns_steps,
           " must be at least 1 (Newton–Schulz iterations; 5 is usual)");
  const size_t steps = static_cast<size_t>(config.ns_steps);
  std::vector<NsStep> out;
  out.reserve(steps);
  switch (config.ns_coefficients) {
    case NsCoefficients::keller: out.assign(steps, kKellerNs); break;
    case NsCoefficients::polar_express:
      for (size_t i = 0; i < steps; ++i) out.push_back(kPolarExpressNs[std::min(i, kPolarExpressNs.size() - 1)]);
      break;
    case NsCoefficients::polar_express_8:
      SB_CHECK(steps >= kPolarExpress8Ns.size(), "config optim.ns_steps=", steps,
               " is below the 8 triples of optim.ns_coefficients=polar_express_8");
      for (size_t i = 0; i < steps; ++i) out.push_back(kPolarExpress8Ns[std::min(i, kPolarExpress8Ns.size() - 1)]);
      break;
    case NsCoefficients::polar_express_5:
      for (size_t i = 0; i < steps; ++i) out.push_back(kPolarExpress5Ns[std::min(i, kPolarExpress5Ns.size() - 1)]);
      break;
    case NsCoefficients::quintic:
      SB_CHECK(steps % kQuinticNs.size() == 0, "config optim.ns_steps=", steps,
               " is not a multiple of the 5 triples of optim.ns_coefficients=quintic");
      for (size_t i = 0; i < steps; ++i) out.push_back(kQuinticNs[i % kQuinticNs.size()]);
      break;
    case NsCoefficients::custom: {
      const std::vector<double>& c = config.ns_custom;
      SB_CHECK(c.size() == 3 || c.size() == 3 * steps, "config optim.ns_custom has ", c.size(),
               " numbers; optim.ns_coefficients=custom needs 3 (a, b, c every step) or 3 × "
               "optim.ns_steps = ",
               3 * steps, " (one triple per step)");
      for (size_t i = 0; i < steps; ++i) {
        const size_t j = c.size() == 3 ? 0 : 3 * i;
        out.push_back({c[j], c[j + 1], c[j + 2]});
      }
      break;
    }
  }
  return out;
}

}  // namespace sb
