// untrusted_text.hpp: a UTF-8 decoder (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF) that copies printable code points and escapes every byte of anything else.
#include "samebits/core/untrusted_text.hpp"

#include <cstdint>
#include <cstdio>

namespace sb {
namespace {

// Length of the valid UTF-8 sequence at text[at] and its code point; 0 when it is not valid.
std::size_t decode(std::string_view text, std::size_t at, uint32_t& code) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char b0 = byte(0);
  std::size_t n = 0;
  uint32_t min = 0;
  if (b0 < 0x80) return code = b0, 1;
  if (b0 >= 0xc2 && b0 <= 0xdf) n = 2, code = b0 & 0x1fu, min = 0x80;
  else if (b0 >= 0xe0 && b0 <= 0xef) n = 3, code = b0 & 0x0fu, min = 0x800;
  else if (b0 >= 0xf0 && b0 <= 0xf4) n = 4, code = b0 & 0x07u, min = 0x10000;
  else return 0;
  if (at + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xc0u) != 0x80u) return 0;
    code = (code << 6) | (byte(k) & 0x3fu);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  return n;
}

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
    std::size_t n = decode(text, at, code);
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
