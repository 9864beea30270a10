// samebits verify RUN.h5 [--from S] [--steps N] [--run.key VALUE …]: re-runs the recorded experiment here and
// checks every step against the file (verify.hpp). Exit 0 all equal, 1 mismatch, 2 error.
#include <iostream>

#include "samebits/cli/command.hpp"
#include "samebits/cli/verify.hpp"
#include "samebits/cli/pack.hpp"
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
  std::string path;
  VerifyOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (a == "--steps" || a.rfind("--steps=", 0) == 0 || a == "--from" || a.rfind("--from=", 0) == 0) {
      const bool from = a.rfind("--from", 0) == 0;
      const std::string flag = from ? "--from" : "--steps";
      std::string v;
      if (a == flag) {
        SB_CHECK(i + 1 < args.size(), flag, " needs a value");
        v = args[++i];
      } else {
        v = a.substr(flag.size() + 1);
      }
      std::size_t used = 0;
      int64_t value = -1;
      try {
        value = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      SB_CHECK(used == v.size() && value >= (from ? 0 : 1), flag, " '", v, "' must be a ",
               from ? "non-negative" : "positive", " integer");
      (from ? options.from : options.steps) = value;
    } else if (a.rfind("--", 0) == 0) {
      options.overrides.push_back(a);
      if (a.find('=') == std::string::npos && i + 1 < args.size()) options.overrides.push_back(args[++i]);
    } else {
      SB_CHECK(path.empty() && a.rfind("-", 0) != 0, "unexpected argument '", a, "' (samebits verify --help)");
      path = a;
    }
  }
  SB_CHECK(!path.empty(), "expected a run file (samebits verify RUN.h5)");
  path = packed_run_path(path);  // a packed folder (samebits pack) names its run
  const VerifyResult r = verify_run(path, options, std::cout);
  std::cout << verify_text(path, r);
  return r.reproduced() ? kExitOk : kExitDifferent;
}

const Registrar kVerify{{"verify", "re-run a recorded run here and check every step's bits (exit 0 = reproduced)",
                         run_verify}};

}  // namespace
}  // namespace sb::cli
