// The samebits subcommands: each file in experiments/cli/ registers one with a static Registrar,
// so main.cpp knows none of them by name. Exit codes: 0 success, 1 "different" (diff, verify),
// 2 error (bad input, failure), as documented in --help.
#pragma once
#include <string>
#include <vector>

namespace sb::cli {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  std::string name;     // e.g. "train", or "data" for "samebits data inspect"
  std::string summary;  // one line for `samebits --help`
  CommandFn run;        // receives the arguments after the command name
};

std::vector<Command>& commands();

struct Registrar {
  explicit Registrar(Command command) { commands().push_back(std::move(command)); }
};

// Run first in main: replaces a vendor BLAS kernel set below this CPU's by executing the process
// again with OPENBLAS_CORETYPE set (experiments/cli/blas_core.cpp); returns when nothing is to do.
void use_native_blas_core(char** argv);

constexpr int kExitOk = 0;
constexpr int kExitDifferent = 1;
constexpr int kExitError = 2;

}  // namespace sb::cli
