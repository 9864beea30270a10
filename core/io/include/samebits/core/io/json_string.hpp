// The one JSON string writer (RFC 8259 §7): the safetensors header and every --json report quote
// their text with it. Quote, backslash and the control bytes below 0x20 are escaped (\u00XX),
// everything else is copied byte for byte, so valid UTF-8 stays valid.
#pragma once
#include <string>
#include <string_view>

namespace sb::io {

// s as a JSON string literal: a"b\n → "a\"b\u000a".
std::string json_string(std::string_view s);

}  // namespace sb::io
