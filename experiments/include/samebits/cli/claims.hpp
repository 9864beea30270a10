// Claims files (`samebits claims check CLAIMS.ini [--budget T] [--runs DIR]`, docs/ARTIFACTS.md):
// each [claim NAME] section names a run (or two), a quantity — a series value at a step, the
// final validation loss, the first divergent step or identity of two runs (diff), a cell of a
// sweep report's table — and the value the paper states. Checking compares every claim with the
// run files (bitwise where a claim gives the bits) and then verifies the runs the claims rest on
// within the budget (verify_budget.hpp). Exit 0 every claim holds and every run reproduces, 1 a
// claim fails or a run does not reproduce (named), 2 a bad claims file or a missing run.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sb::cli {

struct Claim {
  std::string name;                 // the section's NAME
  std::string statement;            // the paper's words (optional)
  std::string quantity;             // series | final_val_loss | first_divergent_step | identical | table_cell
  std::vector<std::string> runs;    // run names (RUNS/NAME.h5): one, or two for diff quantities
  std::string series;               // series: the column under series/ ("loss", "per_tensor/grad_norm")
  std::string tensor;               // series: the tensor of a per-tensor column
  int64_t step = 0;                 // series: the step (1 …)
  std::string report, row, column;  // table_cell: a Markdown table of a sweep report
  std::string value;                // the stated value, as written
  std::string bits;                 // series, final_val_loss: the stated encoding (0x…), compared bitwise
};

struct ClaimsFile {
  std::string path;
  std::string title;
  std::string runs_dir;  // where run NAME is NAME.h5 (absolute or relative to the current folder)
  std::string budget;    // [claims] budget, "" when not given
  std::vector<Claim> claims;
  std::vector<std::string> run_names() const;  // every run a claim names, each once, in order
  std::string run_path(const std::string& name) const;
  std::string report_path(const std::string& report) const;  // beside the runs folder
};

// Reads and checks the file (every key known, every claim complete, quantities known); an
// sb::Error naming the file, the claim and the key otherwise. runs_override: --runs DIR.
ClaimsFile read_claims(const std::string& path, const std::string& runs_override = "");

struct ClaimResult {
  std::string name;
  bool holds = false;
  std::string recorded;  // what the files say, in the claim's terms
  std::string how;       // "bitwise", "as stated (6 decimals)", "exactly"
};

// One claim against the run files; an sb::Error when a run or report is missing or unreadable.
ClaimResult check_claim(const ClaimsFile& file, const Claim& claim);

struct ClaimsCheckOptions {
  std::string runs;                    // --runs DIR ("" : the file's [claims] runs)
  std::string budget;                  // --budget T ("" : the file's, else 10m; 0: no verification)
  std::optional<uint64_t> seed;        // the windows' choice of every verification
  std::vector<std::string> overrides;  // run.* options of the re-runs
};

// Reads the file, checks every claim, verifies the runs the claims rest on within the budget
// (shared equally) and prints the verdicts to `out`. Returns 0 all hold and reproduce, 1 a claim
// fails or a run does not reproduce; throws sb::Error for a bad file or a missing run (exit 2).
int check_claims_file(const std::string& path, const ClaimsCheckOptions& options, std::ostream& out);

}  // namespace sb::cli
