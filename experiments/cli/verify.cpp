// samebits verify RUN.h5 [--from S] [--steps N] [--run.key VALUE …]: re-runs the recorded experiment here and
// checks every step against the file (verify.hpp). Exit 0 all equal, 1 mismatch, 2 error.
#include <fstream>
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

// --budget T: windows chosen to fit T, verified, the verdicts (and --report FILE.md) at the end.
int verify_in_budget(const std::string& path, const std::string& budget, BudgetOptions options,
                     const std::string& report) {
  options.budget = parse_duration(budget, "--budget");
  const BudgetResult r = verify_within_budget(path, options, std::cout);
  std::cout << budget_verdict_text(r);
  if (!report.empty()) {
    std::ofstream out(report, std::ios::trunc);
    out << budget_report_markdown(r);
    SB_CHECK(out.good(), "cannot write the report '", report, "'");
    std::cout << "report written to " << report << "\n";
  }
  return r.reproduced() ? kExitOk : kExitDifferent;
}

int run_verify(const std::vector<std::string>& args) {
  VerifyOptions options;
  std::string budget, report;
  uint64_t seed = 0;
  std::vector<std::string> positional;
  Arguments arguments("verify");
  arguments.integer("from", options.from, 0)
      .integer("steps", options.steps, 1)
      .text("budget", budget)
      .integer("seed", seed)
      .text("report", report)
      .hand_on(options.overrides, "run");
  if (!arguments.parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(positional.size() <= 1, "unexpected argument '", positional.back(), "' (samebits verify --help)");
  const std::string given = positional.empty() ? "" : positional[0];
  SB_CHECK(!given.empty(), "expected a run file (samebits verify RUN.h5)");
  const std::string path = packed_run_path(given);  // a packed folder (samebits pack) names its run
  const bool with_budget = arguments.given("budget");
  for (const char* name : {"from", "steps"}) {
    SB_CHECK(!with_budget || !arguments.given(name), "samebits verify --", name,
             " goes without --budget, which chooses the windows (samebits verify --help)");
  }
  for (const char* name : {"seed", "report"}) {
    SB_CHECK(with_budget || !arguments.given(name), "samebits verify --", name,
             " goes with --budget (samebits verify --help)");
  }
  if (with_budget) {
    BudgetOptions budget_options;
    if (arguments.given("seed")) budget_options.seed = seed;
    budget_options.overrides = options.overrides;
    return verify_in_budget(path, budget, budget_options, report);
  }
  const VerifyResult r = verify_run(path, options, std::cout);
  std::cout << verify_text(path, r);
  return r.reproduced() ? kExitOk : kExitDifferent;
}

const Registrar kVerify{
    {"verify", "re-run a recorded run here and check every step's bits (exit 0 = reproduced)", run_verify}};

}  // namespace
}  // namespace sb::cli
