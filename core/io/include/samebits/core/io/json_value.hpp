// A strict JSON reader (RFC 8259) for small headers from files samebits did not write: the
// safetensors header and a Hugging Face config.json. Hostile input gets an sb::Error naming the
// file and the byte offset, never a crash: nesting depth, text length and member count are
// bounded, strings must be valid UTF-8 (escapes included, no lone surrogates), duplicate object
// keys and trailing bytes are refused. No arithmetic contract (headers only).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sb::io {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool boolean() const { return boolean_; }
  // A number as written ("1e-5", "768") and as a double.
  const std::string& number_text() const { return text_; }
  double number() const { return number_; }
  // True with `out` set when the number is an integer (no fraction, no exponent) in [0, 2^63).
  bool as_uint(uint64_t& out) const;
  const std::string& string() const { return text_; }
  const std::vector<JsonValue>& items() const { return items_; }                              // array
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }  // object, in file order
  // The member named `key`, or null when absent (objects only).
  const JsonValue* find(std::string_view key) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::null;
  bool boolean_ = false;
  double number_ = 0;
  std::string text_;  // string value, or the number's text
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// Parses `text` (the whole of it: whitespace only around the value). `source` names the text in
// errors ("m.safetensors: header"). Limits: depth 16, 1 000 000 values.
JsonValue parse_json(std::string_view text, const std::string& source);

// Kind names for messages: "an object", "a string", …
std::string_view json_kind_name(JsonValue::Kind kind);

}  // namespace sb::io
