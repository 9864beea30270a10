// The command line of every samebits command, read by
// Boost.Program_options as the configuration's options are (options.hpp): --flag, --option VALUE or
// --option=VALUE, positional arguments, and, where a command hands them on to parse_config, the
// --section.key VALUE configuration options untouched. Values are read with the configuration's
// grammar (config_grammar.hpp); every error names the command and the option:
// "samebits diff --steps 'x': expected an integer such as 4".
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sb::cli {

class Arguments {
 public:
  explicit Arguments(std::string command) : command_(std::move(command)) {}  // "diff"

  // The options, by name without the dashes ("json" for --json). Each may be given once, except texts.
  Arguments& flag(const std::string& name, bool& target, bool value = true);  // --name sets target = value
  Arguments& integer(const std::string& name, int64_t& target, int64_t min);  // --name N, N >= min
  Arguments& integer(const std::string& name, int& target, int min);
  Arguments& integer(const std::string& name, uint64_t& target);  // --name N, 0 <= N < 2^64
  Arguments& number(const std::string& name, double& target);     // --name X, finite
  Arguments& text(const std::string& name, std::string& target);
  Arguments& texts(const std::string& name, std::vector<std::string>& target);  // repeatable, in order
  // Every other --option (with its value: after '=', or the next argument when that is no option)
  // is appended to `tokens` as written, for parse_config, instead of being refused; with a
  // `section` ("run"), that section's options only (--run.threads 2), any other one refused.
  Arguments& hand_on(std::vector<std::string>& tokens, std::string section = "");

  // Reads `args` into the targets and returns the positional arguments; false (and nothing read)
  // for --help or -h. Throws sb::Error for an unknown option, a missing or bad value, an option
  // given twice.
  bool parse(const std::vector<std::string>& args, std::vector<std::string>& positional);
  // After parse: whether --name was on the command line.
  bool given(const std::string& name) const;

 private:
  struct Option {
    std::string name;
    bool takes_value = true;
    bool repeatable = false;
    std::function<void(const std::string&)> set;  // receives the value ("" for a flag)
  };
  Arguments& add(Option option);
  [[noreturn]] void fail_value(const std::string& name, const std::string& value, const std::string& expected) const;
  // parser(text), a BadConfigValue becoming an error that names the option.
  template <class T>
  T read(const std::string& name, const std::string& text, T (*parser)(std::string_view)) const;
  int64_t read_integer(const std::string& name, const std::string& text, int64_t min, int64_t max) const;

  std::string command_;
  std::vector<Option> options_;
  std::vector<std::string>* handed_on_ = nullptr;
  std::string handed_section_;  // "": every other option is handed on
  std::set<std::string> given_;
};

}  // namespace sb::cli
