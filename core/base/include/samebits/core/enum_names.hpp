// The spellings of enumerations in config files, run files and messages: EnumNames<E>::names[i]
// spells the enumerator with value i. Each spelling is written once, in a specialisation beside the
// enumeration (numerics.hpp, config.hpp); config_name and config_enum read it both ways.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace sb {

template <class E>
struct EnumNames;

// The config spelling of `value`.
template <class E>
constexpr std::string_view config_name(E value) {
  return EnumNames<E>::names[static_cast<std::size_t>(value)];
}

// The enumerator spelled `text`, or nullopt (exact, case-sensitive match).
template <class E>
constexpr std::optional<E> config_enum(std::string_view text) {
  for (std::size_t i = 0; i < EnumNames<E>::names.size(); ++i) {
    if (EnumNames<E>::names[i] == text) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace sb
