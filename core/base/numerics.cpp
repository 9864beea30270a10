// The numerics switches named for messages, in their config spellings (EnumNames, numerics.hpp).
#include "samebits/core/numerics.hpp"

#include "samebits/det/error.hpp"

namespace sb {

std::string_view to_string(GemmMode m) { return config_name(m); }
std::string_view to_string(ReduceMode m) { return config_name(m); }
std::string_view to_string(Precision p) { return config_name(p); }
std::string_view to_string(Bf16Dot d) { return config_name(d); }

std::string describe(const Numerics& n) {
  return detail::concat("gemm=", to_string(n.gemm), " reduce=", to_string(n.reduce),
                        " precision=", to_string(n.precision), n.bf16_dot == Bf16Dot::pairs ? " bf16_dot=pairs" : "");
}

}  // namespace sb
