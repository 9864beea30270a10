// Sweeps (`samebits sweep FILE.ini`, docs/STUDIES.md §5): a sweep file names a base experiment
// and cells (explicit [cell NAME] sections and the cartesian product of a [grid]); each cell is
// config overrides plus execution keys (ranks under mpirun, micro_leaves, env.*, binary). Every
// cell is trained into OUT/runs/<cell>.h5 by a samebits process (finished runs are skipped,
// interrupted ones resumed), compared bitwise with its group's reference run (diff.hpp), and
// summarised in OUT/summary.h5, OUT/report.md and a table. The sweep only launches and reads:
// every bit of a run is `samebits train`'s.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/config.hpp"

namespace sb::cli {

using KeyValues = std::vector<std::pair<std::string, std::string>>;  // in file order

struct SweepCell {
  std::string name;       // [A-Za-z0-9._-]+, the run file's name
  KeyValues settings;     // config overrides of this cell ("numerics.gemm", "vendor")
  int ranks = 0;          // > 0: launched as mpirun -np ranks; 0: one process
  int micro_leaves = 0;   // accumulation split (samebits train --micro-leaves)
  KeyValues env;          // environment variables of the process
  std::string binary;     // the samebits executable; "" = the one running the sweep
  std::string reference;  // explicit reference cell ("" = the group's rule)

  // Resolved by load_sweep:
  std::vector<std::string> overrides;  // "--key=value" tokens handed to samebits train
  Config config;                       // the cell's resolved configuration
  std::string experiment_id;           // experiment_id(config)
  std::string group;                   // comparison group: the id without the compared axes
  std::string compare_to;              // the reference cell's name (itself for a reference)
  std::string run_path;                // OUT/runs/<name>.h5
  std::string describe() const;        // "threads=1 ranks=3 gemm=vendor", or "(base)"
};

struct SweepSpec {
  std::string file;                     // the sweep file as given
  std::string text;                     // its content (stored in summary.h5)
  std::string base;                     // the base experiment INI ("" = every option at its default)
  std::string out;                      // output folder
  std::string title, question, expect;  // for the report
  bool plot = true;                     // draw PNGs (python3 -m samebits.analysis.report)
  int64_t snapshot_every = 0;           // > 0: snapshots at 0, N, 2N, … ≤ steps (unless a cell sets them)
  bool pairwise = false;                // also compare every pair of cells of a group
  std::vector<SweepCell> cells;         // grid cells first (in product order), then explicit cells
};

struct SweepOptions {
  std::string out;               // overrides [sweep] out
  std::vector<std::string> set;  // "key=value": applied to every cell, last
  int jobs = 1;                  // cells trained at once
  bool plot = true;              // false: no PNGs whatever the file says
  std::string self_binary;       // this samebits executable
  bool live = false;             // redraw the running cells' latest step line (a terminal)
};

// Reads, expands and resolves a sweep file: every cell's configuration parsed (config errors name
// the cell), its group and reference chosen. Throws sb::Error naming the file, line, section and
// key for a bad file.
SweepSpec load_sweep(const std::string& path, const SweepOptions& options);

// The keys that a sweep compares rather than groups by: cells that differ only in these (and in
// execution keys) share a reference. True for numerics.*, perturb.*, train.seed, data.order_seed.
bool is_compared_axis(const std::string& key);

// ---- running ----------------------------------------------------------------------------------

struct CellRun {
  std::string state;    // "trained", "skipped" (already finished), "failed", "interrupted"
  double seconds = 0;   // wall time of this sweep's session of the cell
  std::string log;      // OUT/logs/<cell>.log
  std::string message;  // why it failed
};

// The command line that trains `cell` (mpirun … samebits train BASE … --out RUN --resume).
std::vector<std::string> cell_command(const SweepSpec& spec, const SweepCell& cell, const std::string& self_binary);

// Trains every cell that is not finished, `jobs` at a time, each writing OUT/logs/<cell>.log;
// SIGINT/SIGTERM are passed on to the running cells (which checkpoint) and stop the sweep.
std::vector<CellRun> run_cells(const SweepSpec& spec, const SweepOptions& options, std::ostream& log);

// Draws OUT/plots/*.png from OUT/summary.h5 with `python3 -m samebits.analysis.report OUT` (the
// package found beside the binary or the working directory, or at $SAMEBITS_PYTHONPATH; output in
// OUT/logs/plots.log). Returns the PNG file names; on failure none, and `note` says why.
std::vector<std::string> draw_plots(const SweepSpec& spec, const std::string& self_binary, std::string& note);

// ---- comparing and reporting -----------------------------------------------------------------------

struct CellResult {
  std::string name, description, experiment_id, group, reference, status;
  bool available = false;            // the run file could be read
  bool identical = false;            // bitwise identical to the reference run
  int64_t steps = 0;                 // recorded steps
  int64_t first_divergent_step = 0;  // 0: none
  double final_rel_l2 = 0;           // at the last step both hold parameters (NaN: none)
  int64_t final_distance_step = 0;
  double growth_rate = 0;         // d ln(rel-L2) / d step over the fitted points (Growth; NaN: < 2)
  int64_t jump_step = 0;          // Growth::jump_step (0: none)
  double disagreement = 0;        // argmax disagreement on the probe batch at that last step (NaN: none)
  double logit_correlation = 1;   // Pearson correlation of the probe's logits there
  bool moe = false;               // the cell's model has Mixture-of-Experts blocks
  double route_disagreement = 0;  // MoE: the probe's token routes (positions × blocks) that differ there (NaN: none)
  float final_loss = 0;           // NaN when no step was recorded
  double max_loss_gap = 0;        // max |loss − reference loss| over the compared steps
  double wall_seconds = 0;        // sum of the run's /timing/step_seconds
  std::vector<float> loss;        // (steps)
  std::vector<float> grad_sq_est, trace_est;  // (steps) the noise-scale estimates (TRAINING.md)
  std::vector<double> loss_gap;               // (compared steps) loss − reference loss
  std::vector<int64_t> distance_steps;        // steps where both runs hold the parameters
  std::vector<double> rel_l2;                 // (distance_steps) ‖W − W_ref‖₂ / ‖W_ref‖₂
};

// Every cell compared with its reference (reading OUT/runs/*.h5): diff_runs without agreement, then
// the prediction agreement (divergence.hpp AgreementProbe) at the last shared state of a cell that
// is not identical.
std::vector<CellResult> compare_cells(const SweepSpec& spec);

// Every pair of cells of one group (pairwise = on): first divergent step (0: identical; -1: other
// group or a run missing) and final relative L2 distance (NaN where undefined), (cells, cells),
// row-major, symmetric.
struct Pairwise {
  std::vector<int64_t> first_divergent_step;
  std::vector<double> final_rel_l2;
};
Pairwise compare_pairs(const SweepSpec& spec);

// The pairwise matrix as Markdown: "=" identical, the first divergent step, blank across groups.
std::string pairwise_table(const SweepSpec& spec, const Pairwise& pairs);

// The table printed to stdout and put in the report (Markdown, one row per cell).
std::string results_table(const std::vector<CellResult>& results);

// OUT/summary.h5: root attributes (sweep file, question, expectation, cell names), /cells/<name>
// with the row's attributes and series. Replaced atomically.
// With `pairs` (non-null): /pairwise/first_divergent_step and /pairwise/final_rel_l2 (cells, cells).
void write_summary(const SweepSpec& spec, const std::vector<CellResult>& results, const Pairwise* pairs,
                   const std::string& path);

// OUT/report.md: title, question, expectation, how it was run, the table (and the pairwise
// matrix when `pairs`), the plots in `pngs`
// (file names under OUT/plots/), and a line per failed cell.
std::string report_markdown(const SweepSpec& spec, const std::vector<CellResult>& results, const Pairwise* pairs,
                            const std::vector<std::string>& pngs, const std::string& plot_note);

}  // namespace sb::cli
