// json.hpp: the report text helpers shared by diff, side by side and the divergence curve.
#include "samebits/cli/json.hpp"

#include <cmath>
#include <cstdio>

namespace sb::cli {

std::string fmt(const char* format, double v) {
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string json_number(double v) { return std::isfinite(v) ? fmt("%.17g", v) : "null"; }

}  // namespace sb::cli
