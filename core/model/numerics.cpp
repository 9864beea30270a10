// Names of the numerics switches as they appear in config files and run files.
#include "samebits/core/numerics.hpp"

#include "samebits/det/error.hpp"

namespace sb {

std::string_view to_string(GemmMode m) { return m == GemmMode::canonical ? "canonical" : "vendor"; }
std::string_view to_string(ReduceMode m) {
  return m == ReduceMode::canonical ? "canonical" : "native";
}
std::string_view to_string(Precision p) {
  return p == Precision::fp32 ? "fp32" : p == Precision::bf16 ? "bf16" : "fp16";
}

std::string describe(const Numerics& n) {
  return detail::concat("gemm=", to_string(n.gemm), " reduce=", to_string(n.reduce),
                        " precision=", to_string(n.precision));
}

}  // namespace sb
