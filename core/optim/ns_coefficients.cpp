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
    case NsCoefficients::keller:
      out.assign(steps, kKellerNs);
      break;
    case NsCoefficients::polar_express:
      for (size_t i = 0; i < steps; ++i)
        out.push_back(kPolarExpressNs[std::min(i, kPolarExpressNs.size() - 1)]);
      break;
    case NsCoefficients::custom: {
      const std::vector<double>& c = config.ns_custom;
      SB_CHECK(c.size() == 3 || c.size() == 3 * steps, "config optim.ns_custom has ", c.size(),
               " numbers; optim.ns_coefficients=custom needs 3 (a, b, c every step) or 3 × "
               "optim.ns_steps = ", 3 * steps, " (one triple per step)");
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
