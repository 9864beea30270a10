// `samebits verify RUN.h5 --budget 10m [--seed X] [--report FILE.md]` (docs/ARTIFACTS.md): one
// step is timed here against the recorded step times, and windows — from the start or from a kept
// state to the next — are chosen with a seeded shuffle until the budget is spent; the plan is
// printed before anything runs, each window is verified bit for bit (verify.hpp), and the verdicts
// per window and overall end the output; --report writes the evaluator's report in Markdown.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "samebits/cli/verify.hpp"

namespace sb::cli {

// "10m", "90s", "1h30m", "2m30s", "45" (seconds), "0" (none); an sb::Error naming `what` otherwise.
double parse_duration(const std::string& text, const std::string& what);
// "1m38s", "12.3s", "1h2m": what parse_duration reads back.
std::string duration_spec(double seconds);

struct BudgetOptions {
  double budget = 0;                   // seconds for the calibration and every window
  std::optional<uint64_t> seed;        // the windows' shuffle; none: drawn here (and printed)
  std::vector<std::string> overrides;  // run.* options (threads, backend) for every re-run
};

struct BudgetWindow {
  int64_t from = 0, steps = 0;         // steps from+1 … from+steps
  double expected = 0;                 // seconds, from the calibration
  double steps_priced = 0;             // its steps in median recorded steps (expected = setup + step × this)
  bool skipped = false;                // not run: the steps before it ran slower and left too little budget
  double seconds = 0;                  // taken
  std::optional<VerifyResult> result;  // set once verified
};

struct BudgetResult {
  std::string path;
  uint64_t seed = 0;
  double budget = 0;
  double step_here = 0, step_recorded = 0, setup = 0;     // calibration (seconds)
  std::string backend_here, environment_here, host_here;  // this machine
  int64_t candidates = 0;                                 // windows the run offers (the start and its kept states)
  std::vector<BudgetWindow> windows;                      // the chosen ones, ascending
  std::vector<std::string> data_differences;              // found before anything ran
  double seconds = 0;                                     // everything, calibration included
  bool reproduced() const;
};

// Calibrates, prints the plan to `log`, verifies each chosen window. Throws sb::Error when the
// run cannot be verified at all (damaged, no steps, bad options).
BudgetResult verify_within_budget(const std::string& path, const BudgetOptions& options, std::ostream& log);

// The verdict lines (per window, overall) printed at the end.
std::string budget_verdict_text(const BudgetResult& r);

// The evaluator's report: the run (experiment, who trained it where), this machine, the data,
// the windows with their verdicts, the time used and the command that repeats the choice.
std::string budget_report_markdown(const BudgetResult& r);

}  // namespace sb::cli
