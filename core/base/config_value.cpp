// Scalar configuration values as INI text and back (config_value.hpp). Contract: double_text is
// the shortest text that parses back to the same bits, so INI and experiment texts are exact.
#include "config_value.hpp"

#include <charconv>
#include <cmath>

namespace sb::config_value {

std::string double_text(double value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

std::string trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return std::string(s);
}

namespace {

// The whole of `text` (blanks trimmed) as an integer of type T, or BadConfigValue{expected}.
template <class T>
T parse_integer(std::string_view text, const char* expected) {
  const std::string s = trim(text);
  T v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) throw BadConfigValue{expected};
  return v;
}

}  // namespace

int64_t parse_int(std::string_view text) { return parse_integer<int64_t>(text, "an integer such as 4"); }

uint64_t parse_u64(std::string_view text) {
  return parse_integer<uint64_t>(text, "an integer from 0 to 18446744073709551615");
}

double parse_double(std::string_view text) {
  std::string s = trim(text);
  if (!s.empty() && s.front() == '+') s.erase(0, 1);
  double v = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    throw BadConfigValue{"a finite number such as 0.02 or 3e-4"};
  }
  return v;
}

bool parse_bool(std::string_view text) {
  const std::string s = trim(text);
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw BadConfigValue{"true or false"};
}

}  // namespace sb::config_value
