// untrusted_text.hpp: the strict UTF-8 decoder (utf8.hpp) over the text; printable code points are
// copied, every byte of anything else is escaped.
#include "samebits/core/untrusted_text.hpp"

#include <cstdint>
#include <cstdio>

#include "samebits/core/utf8.hpp"

namespace sb {
namespace {

// Control characters and the bidirectional embeddings, overrides and isolates.
bool unsafe(uint32_t code) {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || (code >= 0x202a && code <= 0x202e) ||
         (code >= 0x2066 && code <= 0x2069);
}

}  // namespace

std::string escape_untrusted(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    uint32_t code = 0;
    std::size_t n = utf8_decode(text, at, code);
    const bool keep = n > 0 && !unsafe(code);
    if (n == 0) n = 1;
    for (std::size_t k = 0; k < n; ++k) {
      if (keep) {
        out += text[at + k];
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(text[at + k]));
        out += hex;
      }
    }
    at += n;
  }
  return out;
}

}  // namespace sb
