// The message a test expects: error_of(f) is the sb::Error message f() throws, or "(no error)"
// when it returns (so a failed CHECK on the text shows that nothing was thrown).
#pragma once
#include <string>

#include "samebits/det/error.hpp"

namespace sbt {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace sbt
