// trace.hpp: `samebits trace A B` end to end — the two runs checked to be one experiment up to
// the configurations samebits compares (numerics, perturbation, precision), the step chosen, the
// state after it reached from A, the step replayed under each run's execution, the streams compared.
#include <algorithm>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/core/enum_names.hpp"
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
         ", precision " + std::string(config_name(s.config.train.precision));
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
  r.first_divergent_step = d.first_divergent_step;
  r.step = options.step > 0 ? options.step : std::max<int64_t>(d.first_divergent_step, 1);
  SB_CHECK(r.step <= d.compared_steps, "samebits trace: no reachable state for step ", r.step, ": ", path_a,
           " records ", d.a.steps, " steps and ", path_b, " records ", d.b.steps,
           " (a traced step is one both runs recorded)");

  ReplaySetup setup_a = replay_setup(a), setup_b = replay_setup(b);
  setup_a.make_backend = options.backend_a;
  setup_b.make_backend = options.backend_b;
  r.setup_a = setup_text(setup_a);
  r.setup_b = setup_text(setup_b);
  const TrainerState state = reachable_state(a, setup_a, r.step - 1, r.state_source);
  r.a = replay_stream(setup_a, state, r.step);
  r.b = replay_stream(setup_b, state, r.step);
  r.comparison = compare_streams(r.a, r.b);
  return r;
}

}  // namespace sb::cli
