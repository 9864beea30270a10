// op_fingerprints: one line per catalog case (op_cases.hpp), "<op> <values hash> <words hash>",
// on the CPU backend (canonical numerics). Built in this build and in the `scalar` preset's
// (-O0, no SIMD); invariance_catalog compares the two outputs for the SIMD-build column.
#include <cstdio>
#include <exception>

#include "invariance/op_cases.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

int main() {
  try {
    const auto be = sb::make_cpu_backend();
    for (const sb::invariance::OpCase& c : sb::invariance::op_cases())
      std::printf("%s %s\n", c.name.c_str(), sb::invariance::output_fingerprint(c.run(*be)).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "op_fingerprints: %s\n", e.what());
    return 1;
  }
  return 0;
}
