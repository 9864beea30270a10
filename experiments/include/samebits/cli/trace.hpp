// `samebits trace` (docs/TRACE.md): the first op at which two runs of one experiment part. The
// step S (the runs' first divergent step, or given) is replayed from run A's latest state at or
// before S−1 — the runs are bitwise equal before S, so A's state serves both — under each run's
// recorded configuration (numerics, threads, micro-leaves; an N-rank run on N simulated ranks in
// this process, core/parallel/thread_world.hpp; runs of different tensor- or pipeline-parallel layouts at one
// layout, match_split_layouts), each replay recording its op-hash stream through a TracingBackend;
// the streams are compared row by row.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::cli {

// How a replay's ranks get their backend (the tests plant a different op through it).
using BackendMaker = std::function<std::unique_ptr<Backend>(const Config& config)>;

// One side's execution, as its run file records it.
struct ReplaySetup {
  Config config;  // the recorded config, run.threads = the recorded thread count
  int world = 1;  // the recorded world size: ranks simulated in this process
  int64_t micro_leaves = 0;
  BackendMaker make_backend;  // empty: the config's run.backend (cpu; cuda where built)
  std::string relayout;       // non-empty: replayed at the other run's layout (match_split_layouts), why
};
// The setup of run file `run` (its last session's execution).
ReplaySetup replay_setup(const run::RunReader& run);

// The state after `step` steps of A's experiment: the latest state A keeps at or before it (or the
// initialisation), then the steps up to `step` replayed under `setup`; the replayed parameters are
// checked against A's recorded fingerprints of `step`. `source` ← where it came from.
TrainerState reachable_state(const run::RunReader& a, const ReplaySetup& setup, int64_t step, std::string& source);

// Runs whose layouts split ops differently (another parallel.tp or parallel.pp: shard or stage ops
// against unsplit ones):
// the run of deterministic numerics (A if both) is replayed at the other's layout (its world and
// parallel section), which gives its bits at any layout; exit 2 when neither runs them.
void match_split_layouts(ReplaySetup& a, ReplaySetup& b, const std::string& path_a, const std::string& path_b);

// Step `step` (1-based) replayed from `state` (after step − 1) under `setup`: the op-hash stream
// in one process's order (trace::canonical_order over the ranks' streams; the rows outside the
// leaves are those of data-parallel rank 0's tensor-parallel group, rank by rank), output values
// kept. `fingerprints` (if given) ← the parameters' fingerprints after the step (full tensors).
std::vector<trace::Row> replay_stream(const ReplaySetup& setup, const TrainerState& state, int64_t step,
                                      std::vector<uint64_t>* fingerprints = nullptr);

// How one row's outputs compare.
struct RowDistance {
  size_t row = 0;
  double differing_fraction = 0;  // elements whose bits differ / elements of the outputs
  uint64_t max_ulp = 0;           // kUlpNaN: a NaN difference
  double rel_l2 = 0;
};

// Two streams of different lengths aligned (compare_aligned): the matched rows, the rows only one
// stream runs.
struct StreamAlignment {
  std::vector<std::pair<size_t, size_t>> pairs;  // matched rows (A's, B's), ascending in A
  std::vector<size_t> reordered;                 // A's rows matched out of B's order (ascending)
  std::vector<size_t> dropped;                   // rows only A runs (ascending)
  std::vector<size_t> inserted;                  // rows only B runs (ascending)
};
StreamAlignment align_streams(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b);

struct StreamComparison {
  size_t rows_a = 0, rows_b = 0;
  std::optional<size_t> origin;  // the first row whose outputs or inputs differ
  // "op": its inputs are equal, its output is not — the op computed differently; "input": an input
  // differs that no earlier row wrote differently (a perturbation, or work outside the traced
  // ops); "sequence": the streams' ops differ here (another op, site, leaf or shape).
  std::string origin_kind;
  std::vector<size_t> differing_inputs;  // origin "input": the inputs whose hashes differ
  std::vector<RowDistance> propagation;  // from the origin on, every row whose outputs differ
  // Recorded streams (compare_aligned): the alignment, B's row of the origin, and for an "input"
  // origin where each differing input was written (an op only one stream runs, or outside the
  // traced ops). Their rows hold no values: the propagation has no distances.
  std::optional<StreamAlignment> alignment;
  size_t origin_b = 0;
  std::vector<std::string> input_sources;
  bool identical() const {
    return !origin && rows_a == rows_b && (!alignment || (alignment->dropped.empty() && alignment->inserted.empty()));
  }
};
StreamComparison compare_streams(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b);
// Recorded streams of different lengths aligned (align_streams), then compared pair by pair in A's
// order: the origin is the first aligned pair whose inputs or outputs differ ("op": inputs equal;
// "input": an input differs, its source named); the propagation every later pair whose outputs
// differ.
StreamComparison compare_aligned(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b);

struct TraceOptions {
  int64_t step = 0;  // 0: the runs' first divergent step (step 1 when they do not diverge)
  // The backends of the two replays (empty: each config's own); the tests plant ops through them.
  BackendMaker backend_a, backend_b;
};

struct TraceResult {
  std::string path_a, path_b, experiment_id;
  std::vector<std::string> differences;  // "numerics.gemm = canonical | vendor"
  int64_t first_divergent_step = 0;      // of the recorded runs; 0: none
  int64_t step = 0;                      // the traced step
  std::string state_source;              // where the state after step − 1 came from
  std::string setup_a, setup_b;          // "threads 2, 1 rank, numerics …"
  std::vector<trace::Row> a, b;
  StreamComparison comparison;
  bool identical() const { return comparison.identical() && first_divergent_step == 0; }
};
// Throws sb::Error (exit 2) for runs of different experiments or an unreachable step.
TraceResult trace_runs(const std::string& path_a, const std::string& path_b, const TraceOptions& options);

// The terminal report and report.md's text.
std::string trace_text(const TraceResult& r, size_t propagation_rows = 12);
std::string trace_markdown(const TraceResult& r);
// propagation.tsv: one line per differing op (op, leaf, site, op_name, differing_fraction, max_ulp,
// rel_l2), after a header line.
std::string trace_tsv(const TraceResult& r);

}  // namespace sb::cli
