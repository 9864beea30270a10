// One configuration value as INI text and back, by the member's C++ type: the writing half feeds
// to_ini_text and experiment_text (shortest exact numbers, so the text is a pure function of the
// value); the reading half throws BadConfigValue saying what was expected.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "samebits/core/config_fields.hpp"
#include "samebits/core/config_grammar.hpp"

namespace sb::config_value {

// Shortest decimal text that parses back to exactly `value` (std::to_chars).
std::string double_text(double value);

// Comma-separated items; the empty text is the empty list.
template <class T>
std::vector<T> parse_list(std::string_view text, T (*parse_item)(std::string_view)) {
  std::vector<T> out;
  if (trim(text).empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(
        parse_item(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

template <class E>
std::string enum_choices(const char* separator) {
  std::string out;
  for (const auto name : EnumNames<E>::names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

template <class E>
E parse_enum(std::string_view text) {
  if (const auto v = config_enum<E>(trim(text))) return *v;
  throw BadConfigValue{"one of " + enum_choices<E>(", ")};
}

template <class Items, class Format>
std::string join(const Items& items, Format format) {
  std::string out;
  for (const auto& v : items) {
    if (!out.empty()) out += ", ";
    out += format(v);
  }
  return out;
}

// The value as an INI file holds it.
template <class T>
std::string text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, double>) return double_text(v);
  else if constexpr (std::is_same_v<T, std::string>) return v;
  else if constexpr (std::is_enum_v<T>) return std::string(config_name(v));
  else return join(v, [](const auto& item) { return text(item); });  // vector<double|int64_t>, array<double, 2>
}

// Parses `s` into `target` (unchanged when it throws BadConfigValue).
template <class T>
void parse(std::string_view s, T& target) {
  if constexpr (std::is_same_v<T, bool>) {
    target = parse_bool(s);
  } else if constexpr (std::is_same_v<T, int>) {
    const int64_t v = parse_int(s);
    if (v < INT32_MIN || v > INT32_MAX) throw BadConfigValue{"an integer between -2^31 and 2^31-1"};
    target = static_cast<int>(v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    target = parse_int(s);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    target = parse_u64(s);
  } else if constexpr (std::is_same_v<T, double>) {
    target = parse_double(s);
  } else if constexpr (std::is_same_v<T, std::string>) {
    target = trim(s);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    target = parse_list<double>(s, parse_double);
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    target = parse_list<int64_t>(s, parse_int);
  } else if constexpr (std::is_same_v<T, std::array<double, 2>>) {
    const auto v = parse_list<double>(s, parse_double);
    if (v.size() != 2) throw BadConfigValue{"two numbers separated by a comma, such as 0.9, 0.95"};
    target = {v[0], v[1]};
  } else {
    static_assert(std::is_enum_v<T>, "unsupported config field type");
    target = parse_enum<T>(s);
  }
}

// What --help and docs/CONFIG.md call the value: INT, FLOAT, BOOL, STRING, lists, or the spellings.
template <class T>
std::string value_name() {
  if constexpr (std::is_same_v<T, bool>) return "BOOL";
  else if constexpr (std::is_integral_v<T>) return "INT";
  else if constexpr (std::is_same_v<T, double>) return "FLOAT";
  else if constexpr (std::is_same_v<T, std::string>) return "STRING";
  else if constexpr (std::is_same_v<T, std::vector<double>>) return "FLOAT,…";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "INT,…";
  else if constexpr (std::is_same_v<T, std::array<double, 2>>) return "FLOAT,FLOAT";
  else return enum_choices<T>("|");
}

}  // namespace sb::config_value
