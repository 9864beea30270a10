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

GemmMode parse_gemm_mode(std::string_view s) {
  if (s == "canonical") return GemmMode::canonical;
  if (s == "vendor") return GemmMode::vendor;
  SB_FAIL("numerics.gemm='", s, "' is not one of canonical, vendor");
}

ReduceMode parse_reduce_mode(std::string_view s) {
  if (s == "canonical") return ReduceMode::canonical;
  if (s == "native") return ReduceMode::native;
  SB_FAIL("numerics.reduce='", s, "' is not one of canonical, native");
}

Precision parse_precision(std::string_view s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp16") return Precision::fp16;
  SB_FAIL("train.precision='", s, "' is not one of fp32, bf16, fp16");
}

std::string describe(const Numerics& n) {
  return detail::concat("gemm=", to_string(n.gemm), " reduce=", to_string(n.reduce),
                        " precision=", to_string(n.precision));
}

}  // namespace sb
