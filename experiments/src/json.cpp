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

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt("\\u%04x", double(static_cast<unsigned char>(c)));
    else out += c;
  }
  return out + "\"";
}

std::string json_number(double v) { return std::isfinite(v) ? fmt("%.17g", v) : "null"; }

}  // namespace sb::cli
