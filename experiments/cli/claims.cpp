// samebits claims check CLAIMS.ini [--budget T] [--runs DIR] [--seed X] [--run.key V …]: checks a
// paper's claims against its run files and verifies the runs they rest on (claims.hpp). Exit 0
// every claim holds and every run reproduces, 1 a claim fails or a run does not reproduce, 2 error.
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/claims.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits claims check CLAIMS.ini [--budget T] [--runs DIR] [--seed X] [--run.threads T ...]\n"
    "\n"
    "Checks every [claim NAME] of CLAIMS.ini against the run files — a series value at a step, the\n"
    "final validation loss, the first divergent step or identity of two runs, a cell of a sweep\n"
    "report's table — and then verifies the runs the claims rest on, bit for bit, within the budget\n"
    "(shared equally; samebits verify --budget). The format: docs/ARTIFACTS.md.\n"
    "\n"
    "  --budget T   time for the verification (10m, 90s, 1h; default the file's [claims] budget,\n"
    "               else 10m); 0: check the claims only\n"
    "  --runs DIR   where run NAME is NAME.h5 (default the file's [claims] runs, relative to it)\n"
    "  --seed X     the choice of windows of every run (default: drawn, printed)\n"
    "  --run.KEY V  execution options of the re-runs (threads, backend)\n"
    "\n"
    "Exit codes: 0 every claim holds and every run reproduces, 1 a claim fails or a run does not\n"
    "reproduce (named), 2 a bad claims file or a missing run.\n";

int run_claims(const std::vector<std::string>& args) {
  ClaimsCheckOptions options;
  uint64_t seed = 0;
  std::vector<std::string> positional;
  Arguments arguments("claims");
  arguments.text("budget", options.budget)
      .text("runs", options.runs)
      .integer("seed", seed)
      .hand_on(options.overrides, "run");
  if (!arguments.parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(positional.size() == 2 && positional[0] == "check",
           "expected samebits claims check CLAIMS.ini (samebits claims --help)");
  if (arguments.given("seed")) options.seed = seed;
  return check_claims_file(positional[1], options, std::cout);
}

const Registrar kClaims{
    {"claims", "check a paper's claims against its run files and verify the runs (exit 0 = all hold)", run_claims}};

}  // namespace
}  // namespace sb::cli
