// Small text helpers for the commands' reports and their --json forms (diff, side by side, the
// divergence curve): one printf-style number, JSON strings (io::json_string) and numbers. No
// arithmetic.
#pragma once
#include <string>

#include "samebits/core/io/json_string.hpp"

namespace sb::cli {

// `format` (one printf conversion of a double) applied to v; at most 63 characters.
std::string fmt(const char* format, double v);
using io::json_string;
// v with 17 significant digits (round-trips fp64), or null when v is not finite.
std::string json_number(double v);

}  // namespace sb::cli
