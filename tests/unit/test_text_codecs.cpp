// The one UTF-8 codec (utf8.hpp) and the one JSON string writer (io/json_string.hpp): every code
// point round-trips, every malformed sequence is refused, and the JSON reader reads back exactly
// what the writer quoted.
#include <doctest/doctest.h>

#include <string>

#include "samebits/core/io/json_string.hpp"
#include "samebits/core/io/json_value.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/core/utf8.hpp"

TEST_CASE("utf8: every scalar value encodes and decodes back; the encoded length is the shortest") {
  for (uint32_t code = 0; code <= 0x10ffff; ++code) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    std::string bytes;
    sb::utf8_append(bytes, code);
    const std::size_t want = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    uint32_t back = 0xffffffff;
    REQUIRE(bytes.size() == want);
    REQUIRE(sb::utf8_decode(bytes, 0, back) == want);
    REQUIRE(back == code);
  }
}

TEST_CASE("utf8: overlong forms, surrogates, values above U+10FFFF, stray and cut sequences are refused") {
  uint32_t code = 0;
  for (const char* bad : {"\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
                          "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\x80", "\xe2\x82", "\xe2\x28\xac"}) {
    CAPTURE(sb::escape_untrusted(bad));
    CHECK(sb::utf8_decode(bad, 0, code) == 0);
  }
  const std::string text = "a\xe2\x80\x94";  // "a—": decoded at an offset
  CHECK(sb::utf8_decode(text, 1, code) == 3);
  CHECK(code == 0x2014);
  CHECK(sb::utf8_decode(std::string_view(text).substr(0, 3), 1, code) == 0);  // cut by the view
}

TEST_CASE("json_string: quote, backslash and control bytes escaped; the JSON reader reads the text back") {
  CHECK(sb::io::json_string("a\"b\\c\n\x1f\x7f") == "\"a\\\"b\\\\c\\u000a\\u001f\x7f\"");
  CHECK(sb::io::json_string("") == "\"\"");
  std::string all;  // every byte below 0x80 and a few multi-byte characters
  for (int c = 0; c < 0x80; ++c) all += char(c);
  all += "\xe2\x80\x94\xf0\x9f\x98\x80";
  const sb::io::JsonValue v = sb::io::parse_json(sb::io::json_string(all), "test");
  REQUIRE(v.is(sb::io::JsonValue::Kind::string));
  CHECK(v.string() == all);
  const sb::io::JsonValue escaped = sb::io::parse_json("\"\\u00e9\\ud83d\\ude00\"", "test");
  CHECK(escaped.string() == "\xc3\xa9\xf0\x9f\x98\x80");  // \u escapes encoded by utf8_append
}
