// sb::Error and the SB_CHECK macro family: every failure names what was expected and what was seen.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace sb {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& message);

// Streams any values into one message: SB_CHECK(x > 0, "config key a=", a, " must be positive").
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace sb

// SB_CHECK(cond, parts...): throws sb::Error(parts...) when cond is false.
#define SB_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (!(cond)) ::sb::detail::throw_error(__FILE__, __LINE__, ::sb::detail::concat(__VA_ARGS__)); \
  } while (0)

// SB_FAIL(parts...): throws sb::Error unconditionally.
#define SB_FAIL(...) ::sb::detail::throw_error(__FILE__, __LINE__, ::sb::detail::concat(__VA_ARGS__))
