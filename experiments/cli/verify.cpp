// samebits verify RUN.h5 [--from S] [--steps N] [--run.key VALUE …]: re-runs the recorded experiment here and
// checks every step against the file (verify.hpp). Exit 0 all equal, 1 mismatch, 2 error.
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/pack.hpp"
#include "samebits/cli/verify.hpp"
#include "samebits/cli/verify_budget.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits verify RUN.h5 [--from S] [--steps N] [--run.threads T ...]\n"
    "       samebits verify RUN.h5 --budget 10m [--seed X] [--report FILE.md] [--run.threads T ...]\n"
    "\n"
    "Re-runs the experiment recorded in RUN.h5 (its resolved config) on this machine and compares\n"
    "every step with the file, bit for bit: each tensor's parameter and gradient fingerprints, the\n"
    "loss, the validation loss and every statistic. Reports the first mismatch: step, series,\n"
    "tensors, and where the file holds that step's parameters (a snapshot, a checkpoint, the final\n"
    "state) the first differing element with both values (hex) and their ULP distance.\n"
    "\n"
    "  --from S           start from the full state the run keeps at step S (train.keep_states,\n"
    "                     checkpoints, the final state) instead of replaying steps 1 … S\n"
    "  --steps N          check N steps only (default: every recorded step after S)\n"
    "  --budget T         instead of every step: time one step here, choose windows (the start\n"
    "                     and the kept states, each to the next) that fit in T (10m, 90s, 1h),\n"
    "                     print the plan, verify each and give a verdict per window and overall\n"
    "  --seed X           the choice of windows (default: drawn, printed); with --budget\n"
    "  --report FILE.md   the evaluator's report: the run, this machine, windows, verdicts, time\n"
    "  --run.KEY VALUE    execution options (threads, backend, progress, log_every); they never\n"
    "                     change the bits, so a mismatch is a reproducibility failure\n"
    "\n"
    "Exit codes: 0 every step matches, 1 mismatch, 2 error.\n";

int run_verify(const std::vector<std::string>& args) {
  if (budget_requested(args)) return verify_budget_command(args);
  VerifyOptions options;
  std::vector<std::string> positional;
  if (!Arguments("verify")
           .integer("from", options.from, 0)
           .integer("steps", options.steps, 1)
           .hand_on(options.overrides)
           .parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(positional.size() <= 1, "unexpected argument '", positional.back(), "' (samebits verify --help)");
  const std::string given = positional.empty() ? "" : positional[0];
  SB_CHECK(!given.empty(), "expected a run file (samebits verify RUN.h5)");
  const std::string path = packed_run_path(given);  // a packed folder (samebits pack) names its run
  const VerifyResult r = verify_run(path, options, std::cout);
  std::cout << verify_text(path, r);
  return r.reproduced() ? kExitOk : kExitDifferent;
}

const Registrar kVerify{
    {"verify", "re-run a recorded run here and check every step's bits (exit 0 = reproduced)", run_verify}};

}  // namespace
}  // namespace sb::cli
