// Exit code 77 tells CTest a test was skipped (SKIP_RETURN_CODE), e.g. no GPU or no mpirun here.
#pragma once
#include <cstdio>
#include <cstdlib>

namespace sb::test {
[[noreturn]] inline void skip(const char* why) {
  std::printf("SKIPPED: %s\n", why);
  std::fflush(stdout);
  std::_Exit(77);
}
}  // namespace sb::test
