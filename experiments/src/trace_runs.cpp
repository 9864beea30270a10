// trace.hpp: `samebits trace A B` end to end — the two runs checked to be one experiment up to
// the configurations samebits compares (numerics, perturbation, precision), the step chosen, the
// state after it reached from A, the step replayed under each run's execution, the streams compared.
// Two PyTorch runs (samebits.torch.Recorder) are not replayed: their recorded streams are aligned.
#include <algorithm>
#include <filesystem>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/core/enum_names.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

// Experiment fields two traced runs may differ in: the configurations being compared.
bool comparable_field(const std::string& difference) {
  for (const char* prefix : {"numerics.", "perturb.", "train.precision"})
    if (difference.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string setup_text(const ReplaySetup& s) {
  const NumericsConfig& n = s.config.numerics;
  return std::string(s.config.run.backend == Device::cpu ? "cpu" : "cuda") + ", " +
         std::to_string(s.config.run.threads) + " threads, " + std::to_string(s.world) +
         (s.world == 1 ? " process" : " simulated ranks") + ", micro_leaves " + std::to_string(s.micro_leaves) +
         ", gemm " + std::string(config_name(n.gemm)) + ", reduce " + std::string(config_name(n.reduce)) +
         ", allreduce " + std::string(config_name(n.allreduce)) + ", leaf_sum " + std::string(config_name(n.leaf_sum)) +
         ", precision " + std::string(config_name(s.config.train.precision)) +
         (s.config.parallel.tp > 1 ? ", tp " + std::to_string(s.config.parallel.tp) : "") +
         (s.config.parallel.ep > 1 ? ", ep " + std::to_string(s.config.parallel.ep) : "") +
         (s.config.parallel.pp > 1 ? ", pp " + std::to_string(s.config.parallel.pp) : "") +
         (s.relayout.empty() ? "" : ", " + s.relayout);
}

// A run replayed at the other run's layout (match_split_layouts) must give, after the traced step,
// the parameters it records there: else its bits depend on the layout after all (a broken contract,
// or a configuration that is not layout-invariant), and its stream would stand for a run it is not.
void check_relayout(const run::RunReader& run, const ReplaySetup& setup, const std::vector<uint64_t>& params,
                    int64_t step) {
  if (setup.relayout.empty()) return;
  const std::vector<uint64_t> recorded = run.series_rows<uint64_t>("series/param_fingerprint", uint64_t(step - 1), 1);
  SB_CHECK(recorded == params, "samebits trace: ", run.path(), " ", setup.relayout,
           " does not reproduce the parameters it records after step ", step,
           ": its bits depend on the layout, and its stream at this layout would not be its own (samebits diff "
           "compares its runs at the two layouts)");
}

// Step `step`'s stream as `run` recorded it beside itself (RUN.trace.h5).
std::vector<trace::Row> recorded_stream(const run::RunReader& run, int64_t step) {
  const std::string path = io::trace_file_path(run.path());
  SB_CHECK(std::filesystem::exists(path), "samebits trace: ", run.path(),
           " is a PyTorch run, which cannot be replayed, and it has no trace file ", path,
           " (record the step with samebits.torch.Recorder(..., trace_steps=(", step, ",)))");
  std::string steps;
  for (io::TracedStep& s : io::read_trace_file(path)) {
    if (s.step == step) return std::move(s.rows);
    steps += (steps.empty() ? "" : ", ") + std::to_string(s.step);
  }
  SB_FAIL("samebits trace: ", path, " holds no trace of step ", step, " (it traced step(s) ",
          steps.empty() ? "none" : steps, "); ", run.path(),
          " is a PyTorch run, which cannot be replayed: record the step with "
          "samebits.torch.Recorder(..., trace_steps=(",
          step, ",))");
}

// Two PyTorch runs: their recorded streams of the step, aligned (their configurations may differ
// in anything; the experiment fields they differ in are listed).
TraceResult trace_recorded(const run::RunReader& a, const run::RunReader& b, TraceResult r) {
  SB_CHECK(recorded_program(a) && recorded_program(b), "samebits trace: ", r.path_a, " and ", r.path_b,
           " are not both PyTorch runs (samebits.torch.Recorder) or both samebits runs: their op streams do not "
           "compare");
  r.state_source = "the streams recorded during the runs";
  r.setup_a = escape_untrusted(a.info().execution.backend);
  r.setup_b = escape_untrusted(b.info().execution.backend);
  r.a = recorded_stream(a, r.step);
  r.b = recorded_stream(b, r.step);
  r.comparison = compare_aligned(r.a, r.b);
  return r;
}

}  // namespace

TraceResult trace_runs(const std::string& path_a, const std::string& path_b, const TraceOptions& options) {
  const run::RunReader a = run::RunReader::open(path_a), b = run::RunReader::open(path_b);
  DiffOptions diff_options;
  diff_options.agreement = false;
  const RunDiff d = diff_runs(a, b, diff_options);
  TraceResult r;
  r.path_a = path_a;
  r.path_b = path_b;
  r.experiment_id = d.a.experiment_id;
  r.differences = d.experiment_differences;
  r.first_divergent_step = d.first_divergent_step;
  r.step = options.step > 0 ? options.step : std::max<int64_t>(d.first_divergent_step, 1);
  if (recorded_program(a) || recorded_program(b)) return trace_recorded(a, b, std::move(r));
  std::vector<std::string> other;
  for (const std::string& f : d.experiment_differences)
    if (!comparable_field(f)) other.push_back(f);
  if (!d.same_layout || !other.empty()) {
    std::string list;
    for (const std::string& f : other) list += "\n  " + escape_untrusted(f);
    SB_FAIL("samebits trace: ", path_a, " and ", path_b, " are runs of different experiments (", d.a.experiment_id,
            ", ", d.b.experiment_id, ")", d.same_layout ? "" : "; their tensor tables differ",
            list.empty() ? "" : "; they differ in" + list,
            "\ntrace compares configurations of one experiment: runs that differ only in numerics.*, perturb.* "
            "or train.precision");
  }
  SB_CHECK(r.step <= d.compared_steps, "samebits trace: no reachable state for step ", r.step, ": ", path_a,
           " records ", d.a.steps, " steps and ", path_b, " records ", d.b.steps,
           " (a traced step is one both runs recorded)");

  ReplaySetup setup_a = replay_setup(a), setup_b = replay_setup(b);
  setup_a.make_backend = options.backend_a;
  setup_b.make_backend = options.backend_b;
  const TrainerState state = reachable_state(a, setup_a, r.step - 1, r.state_source);
  match_split_layouts(setup_a, setup_b, path_a, path_b);
  std::vector<uint64_t> params_a, params_b;
  r.a = replay_stream(setup_a, state, r.step, &params_a);
  r.b = replay_stream(setup_b, state, r.step, &params_b);
  check_relayout(a, setup_a, params_a, r.step);
  check_relayout(b, setup_b, params_b, r.step);
  r.setup_a = setup_text(setup_a);
  r.setup_b = setup_text(setup_b);
  r.comparison = compare_streams(r.a, r.b);
  return r;
}

}  // namespace sb::cli
