// json_string.hpp: one pass over the bytes; the escapes are the two-character \" and \\ and the
// six-character \u00XX (lowercase hex) for the control bytes.
#include "samebits/core/io/json_string.hpp"

namespace sb::io {

std::string json_string(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace sb::io
