// utf8.hpp: the lead byte gives the length, the minimum code point of that length (no overlong
// form) and its payload bits; each continuation byte is 10xxxxxx.
#include "samebits/core/utf8.hpp"

namespace sb {

std::size_t utf8_decode(std::string_view text, std::size_t at, uint32_t& code) {
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

void utf8_append(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += char(code);
  } else if (code < 0x800) {
    out += char(0xc0 | (code >> 6));
    out += char(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += char(0xe0 | (code >> 12));
    out += char(0x80 | ((code >> 6) & 0x3f));
    out += char(0x80 | (code & 0x3f));
  } else {
    out += char(0xf0 | (code >> 18));
    out += char(0x80 | ((code >> 12) & 0x3f));
    out += char(0x80 | ((code >> 6) & 0x3f));
    out += char(0x80 | (code & 0x3f));
  }
}

}  // namespace sb
