// sb::Error construction: the message is the user-facing text; the source location is appended
// only when SAMEBITS_DEBUG_ERRORS is set, so errors stay one clear line.
#include "samebits/det/error.hpp"

#include <cstdlib>

namespace sb::detail {

void throw_error(const char* file, int line, const std::string& message) {
  if (std::getenv("SAMEBITS_DEBUG_ERRORS") != nullptr) {
    throw Error(message + " [" + file + ":" + std::to_string(line) + "]");
  }
  throw Error(message);
}

}  // namespace sb::detail
