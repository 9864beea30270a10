// json_value.hpp: a recursive-descent JSON parser with bounded depth and size. Errors quote no
// text of the input (it may be hostile); they name the source, the byte offset and what was
// expected. Numbers are read by std::from_chars (locale-free, correctly rounded).
#include "samebits/core/io/json_value.hpp"

#include <charconv>
#include <unordered_set>

#include "samebits/core/utf8.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {

constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxValues = 1000000;

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  JsonValue document() {
    JsonValue v = value(0);
    space();
    if (at_ != s_.size()) fail("bytes after the end of the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    SB_FAIL(source_, ": invalid JSON at byte ", at_, ": ", what);
  }
  void space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  void expect(char c, const char* what) {
    space();
    if (at_ >= s_.size() || s_[at_] != c) fail(std::string("expected ") + what);
    ++at_;
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (++values_ > kMaxValues) fail("more than " + std::to_string(kMaxValues) + " values");
    space();
    if (at_ >= s_.size()) fail("unexpected end of the text");
    JsonValue v;
    const char c = s_[at_];
    if (c == '{') {
      v.kind_ = JsonValue::Kind::object;
      ++at_;
      space();
      if (at_ < s_.size() && s_[at_] == '}') return ++at_, v;
      std::unordered_set<std::string> names;  // duplicate names refused in linear time
      for (;;) {
        space();
        if (at_ >= s_.size() || s_[at_] != '"') fail("expected a member name (a string)");
        std::string key = string();
        if (!names.insert(key).second) fail("a member name appears twice in one object");
        expect(':', "':' after a member name");
        v.members_.emplace_back(std::move(key), value(depth + 1));
        space();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        expect('}', "',' or '}' in an object");
        return v;
      }
    }
    if (c == '[') {
      v.kind_ = JsonValue::Kind::array;
      ++at_;
      space();
      if (at_ < s_.size() && s_[at_] == ']') return ++at_, v;
      for (;;) {
        v.items_.push_back(value(depth + 1));
        space();
        if (at_ < s_.size() && s_[at_] == ',') {
          ++at_;
          continue;
        }
        expect(']', "',' or ']' in an array");
        return v;
      }
    }
    if (c == '"') {
      v.kind_ = JsonValue::Kind::string;
      v.text_ = string();
      return v;
    }
    if (literal("true")) return v.kind_ = JsonValue::Kind::boolean, v.boolean_ = true, v;
    if (literal("false")) return v.kind_ = JsonValue::Kind::boolean, v;
    if (literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("expected a value");
  }

  JsonValue number() {
    // RFC 8259 grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    const std::size_t start = at_;
    const auto digits = [&] {
      const std::size_t from = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == from) fail("expected a digit in a number");
    };
    if (s_[at_] == '-') ++at_;
    if (at_ < s_.size() && s_[at_] == '0') ++at_;
    else digits();
    if (at_ < s_.size() && s_[at_] == '.') ++at_, digits();
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      digits();
    }
    JsonValue v;
    v.kind_ = JsonValue::Kind::number;
    v.text_ = std::string(s_.substr(start, at_ - start));
    const auto [end, ec] = std::from_chars(v.text_.data(), v.text_.data() + v.text_.size(), v.number_);
    if (ec != std::errc() || end != v.text_.data() + v.text_.size()) fail("a number outside the range of a double");
    return v;
  }

  unsigned hex4() {
    unsigned u = 0;
    for (int k = 0; k < 4; ++k, ++at_) {
      if (at_ >= s_.size()) fail("unexpected end inside a \\u escape");
      const char h = s_[at_];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail("a \\u escape needs four hex digits");
      u = u * 16 + unsigned(d);
    }
    return u;
  }

  std::string string() {
    ++at_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) fail("unexpected end inside a string");
      const unsigned char c = static_cast<unsigned char>(s_[at_]);
      if (c == '"') return ++at_, out;
      if (c < 0x20) fail("a control byte inside a string (write it as a \\u escape)");
      if (c == '\\') {
        if (++at_ >= s_.size()) fail("unexpected end inside a string");
        const char e = s_[at_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = hex4();
            if (cp >= 0xdc00 && cp <= 0xdfff) fail("a lone low surrogate in a \\u escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
              if (!literal("\\u")) fail("a high surrogate not followed by a low one");
              const uint32_t low = hex4();
              if (low < 0xdc00 || low > 0xdfff) fail("a high surrogate not followed by a low one");
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            utf8_append(out, cp);
            break;
          }
          default: --at_, fail("an unknown escape in a string");
        }
        continue;
      }
      if (c < 0x80) {
        out += char(c);
        ++at_;
        continue;
      }
      uint32_t code = 0;
      const std::size_t n = utf8_decode(s_, at_, code);
      if (n == 0) fail("invalid UTF-8 inside a string");
      out.append(s_.substr(at_, n));
      at_ += n;
    }
  }

  std::string_view s_;
  const std::string& source_;
  std::size_t at_ = 0;
  std::size_t values_ = 0;
};

bool JsonValue::as_uint(uint64_t& out) const {
  if (kind_ != Kind::number || text_.empty() || text_[0] == '-') return false;
  if (text_.find_first_of(".eE") != std::string::npos) return false;
  const auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), out);
  return ec == std::errc() && end == text_.data() + text_.size() && out < (uint64_t{1} << 63);
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

JsonValue parse_json(std::string_view text, const std::string& source) { return JsonParser(text, source).document(); }

std::string_view json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::boolean: return "a boolean";
    case JsonValue::Kind::number: return "a number";
    case JsonValue::Kind::string: return "a string";
    case JsonValue::Kind::array: return "an array";
    case JsonValue::Kind::object: return "an object";
  }
  return "?";
}

}  // namespace sb::io
