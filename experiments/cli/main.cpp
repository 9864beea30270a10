// samebits: the command-line entry point. Dispatches to the registered commands; every sb::Error
// becomes one clear line on stderr (escaped: it may quote names and values from files) and exit
// code 2.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>

#include "samebits/cli/command.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/build_info.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fpenv.hpp"

namespace sb::cli {

std::vector<Command>& commands() {
  static std::vector<Command> registry;
  return registry;
}

namespace {

void print_help() {
  std::cout << "samebits " << build::kVersion << " — bitwise-reproducible LLM training\n\n"
            << "usage: samebits <command> [arguments]   (samebits <command> --help for its options)\n\n"
            << "commands:\n";
  auto sorted = commands();
  std::sort(sorted.begin(), sorted.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  for (const auto& c : sorted) {
    std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
  }
  std::cout << "\noptions:\n  --help     this text\n  --version  version, commit and numerics flags\n"
            << "\nexit codes: 0 success / identical, 1 different (diff, verify), 2 error\n";
}

void print_version() {
  std::cout << "samebits " << build::kVersion << " (commit " << build::kGitCommit << ")\n"
            << "compiler: " << build::kCompiler << ", build type " << build::kBuildType << "\n"
            << "numerics: " << build::kFpFlags << "\n";
}

}  // namespace
}  // namespace sb::cli

int main(int argc, char** argv) {
  using namespace sb::cli;
  use_native_blas_core(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help();
    return args.empty() ? kExitError : kExitOk;
  }
  if (args[0] == "--version") {
    print_version();
    return kExitOk;
  }
  for (const auto& c : commands()) {
    if (c.name == args[0]) {
      try {
        sb::det::check_fp_environment();  // rule 8: no FTZ/DAZ, round to nearest, no contraction
        return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
      } catch (const sb::Error& e) {
        std::cerr << "samebits " << c.name << ": error: " << sb::escape_untrusted(e.what()) << "\n";
        return kExitError;
      } catch (const std::exception& e) {
        std::cerr << "samebits " << c.name << ": unexpected error: " << sb::escape_untrusted(e.what()) << "\n";
        return kExitError;
      }
    }
  }
  std::cerr << "samebits: unknown command '" << args[0] << "' (samebits --help lists the commands)\n";
  return kExitError;
}
