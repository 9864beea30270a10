// The floating-point environment guard: passes in the default environment, and fails with a clear
// message when FTZ, DAZ or a directed rounding mode is switched on (each restored afterwards).
#include <doctest/doctest.h>

#include <cfenv>
#include <string>

#include "samebits/det/error.hpp"
#include "samebits/det/fpenv.hpp"
#include "samebits/det/selftest.hpp"
#include "support/skip.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

using sb::det::check_fp_environment;
using sb::det::fp_environment_description;

namespace {

// The message check_fp_environment throws, or "" when it passes.
std::string guard_message() {
  try {
    check_fp_environment();
    return "";
  } catch (const sb::Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("the default environment passes and is described") {
  CHECK(guard_message() == "");
  const std::string d = fp_environment_description();
  CHECK(d.find("FTZ=off") != std::string::npos);
  CHECK(d.find("DAZ=off") != std::string::npos);
  CHECK(d.find("round=nearest") != std::string::npos);
  const auto r = sb::det::selftest_fp_env();
  CHECK(r.ok);
  CHECK(r.detail.find("FTZ=off") != std::string::npos);
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE("FTZ or DAZ switched on in MXCSR makes the guard fail") {
  const unsigned saved = _mm_getcsr();
  CHECK(fp_environment_description().find("MXCSR=0x") == 0);
  for (const unsigned bit : {0x8000u, 0x0040u}) {  // FTZ, DAZ
    _mm_setcsr(saved | bit);
    const std::string message = guard_message();
    const std::string description = fp_environment_description();
    _mm_setcsr(saved);
    INFO("bit " << bit << ": " << message);
    CHECK(message.find("expected FTZ=off DAZ=off round=nearest") != std::string::npos);
    CHECK(message.find(bit == 0x8000u ? "FTZ=on" : "DAZ=on") != std::string::npos);
    CHECK(description.find(bit == 0x8000u ? "FTZ=on" : "DAZ=on") != std::string::npos);
  }
  CHECK(guard_message() == "");
}
#endif

TEST_CASE("a directed rounding mode makes the guard fail") {
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
    REQUIRE(std::fesetround(mode) == 0);
    const std::string message = guard_message();
    const std::string description = fp_environment_description();
    std::fesetround(FE_TONEAREST);
    INFO(message);
    CHECK(message.find("round=nearest, seen") != std::string::npos);
    CHECK(description.find("round=nearest") == std::string::npos);
  }
  CHECK(guard_message() == "");
}
