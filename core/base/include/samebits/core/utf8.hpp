// The one UTF-8 codec (RFC 3629): the strict decoder that escape_untrusted (untrusted_text.hpp) and
// the JSON reader (io/json_value.hpp) both apply to bytes from files, and the encoder of one code
// point. No overlong forms, no surrogates, nothing above U+10FFFF.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sb {

// Length (1-4) of the valid UTF-8 sequence at text[at] (at < text.size()), with its code point in
// `code`; 0 when the bytes there are not one ("\xc0\xaf", "\xed\xa0\x80", a cut sequence).
std::size_t utf8_decode(std::string_view text, std::size_t at, uint32_t& code);

// Appends `code` (at most U+10FFFF, not a surrogate) as UTF-8.
void utf8_append(std::string& out, uint32_t code);

}  // namespace sb
