// The grammar of one scalar value a user writes: INI files, the command line of every samebits
// command and sweep files read integers, numbers and switches with these (std::from_chars: the
// whole text, blanks trimmed, no locale, no trailing bytes). Errors are BadConfigValue saying what
// was expected; the caller adds the key or option, the value and where it was read.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "samebits/core/config_fields.hpp"

namespace sb::config_value {

// `s` without surrounding blanks (space, tab, CR, LF).
std::string trim(std::string_view s);

int64_t parse_int(std::string_view text);    // "4", "-3"; not "+4", "4.0", "4x"
uint64_t parse_u64(std::string_view text);   // 0 … 2^64 - 1
double parse_double(std::string_view text);  // finite: "0.02", "3e-4", "+1"
bool parse_bool(std::string_view text);      // true/false, 1/0, yes/no, on/off

}  // namespace sb::config_value
