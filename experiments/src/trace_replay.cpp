// trace.hpp: the replays of `samebits trace` — the state after step S−1 (A's latest kept state, then
// A's steps replayed and checked against its recorded fingerprints), and step S under one run's
// recorded execution on TracingBackends, one per rank of a simulated world (thread_world.hpp).
#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "samebits/cli/inspect.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "samebits/core/tracing_backend.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::cli {
namespace {

std::unique_ptr<Backend> backend_for(const ReplaySetup& setup) {
  return setup.make_backend ? setup.make_backend(setup.config) : make_backend(setup.config, 0);
}

TrainerOptions trainer_options(const ReplaySetup& setup, const std::vector<float>& initial_weights) {
  TrainerOptions o;
  o.micro_leaves = static_cast<int>(setup.micro_leaves);
  if (!setup.config.train.init.empty()) o.initial_weights = &initial_weights;
  return o;
}

// The stream of a pipeline's ranks in one process's order: a leaf's rows are spread over the
// ranks of its pipeline (ascending world rank = ascending stage); each stage's part is its forward
// rows, then its backward rows (from its first row whose site is a backward). One process runs the
// forwards stage by stage, then the backwards from the last stage down. Rows without a leaf (the
// step's gradient and update ops, over each stage's own tensors): those of each stage's data-parallel
// rank 0's tensor-parallel group, stage by stage, rank by rank.
std::vector<trace::Row> pipeline_order(std::vector<std::vector<trace::Row>> ranks, size_t group, size_t stages) {
  std::map<int64_t, std::vector<std::vector<trace::Row>>> forward, backward;  // leaf → stages' parts
  for (std::vector<trace::Row>& rank : ranks) {
    std::map<int64_t, std::pair<std::vector<trace::Row>, std::vector<trace::Row>>> mine;
    for (trace::Row& row : rank) {
      if (row.leaf < 0) continue;
      auto& [fwd, bwd] = mine[row.leaf];
      (bwd.empty() && row.site.find(" backward") == std::string::npos ? fwd : bwd).push_back(std::move(row));
    }
    for (auto& [leaf, parts] : mine) {
      forward[leaf].push_back(std::move(parts.first));
      backward[leaf].insert(backward[leaf].begin(), std::move(parts.second));
    }
  }
  std::vector<trace::Row> rows;
  for (auto& [leaf, parts] : forward) {
    for (std::vector<trace::Row>& part : parts) std::move(part.begin(), part.end(), std::back_inserter(rows));
    for (std::vector<trace::Row>& part : backward[leaf]) std::move(part.begin(), part.end(), std::back_inserter(rows));
  }
  const size_t per_stage = ranks.size() / stages;
  for (size_t stage = 0; stage < stages; ++stage)
    for (size_t r = stage * per_stage; r < stage * per_stage + group; ++r)
      for (trace::Row& row : ranks[r])
        if (row.leaf < 0) rows.push_back(std::move(row));
  return rows;
}

}  // namespace

ReplaySetup replay_setup(const run::RunReader& run) {
  ReplaySetup s;
  s.config = recorded_config(run);
  const run::Execution& e = run.info().execution;
  s.config.run.threads = e.threads;
  s.config.run.progress = Progress::off;
  SB_CHECK(e.world_size >= 1 && e.world_size <= 64, run.path(), ": execution world_size ", e.world_size,
           " is not a world samebits trace simulates (1 to 64 ranks)");
  s.world = static_cast<int>(e.world_size);
  s.micro_leaves = e.micro_leaves;
  return s;
}

void match_split_layouts(ReplaySetup& a, ReplaySetup& b, const std::string& path_a, const std::string& path_b) {
  const ParallelConfig &pa = a.config.parallel, &pb = b.config.parallel;
  if (pa.tp == pb.tp && pa.pp == pb.pp && pa.ep == pb.ep) return;
  const auto layout = [](const ParallelConfig& p) {
    return "parallel.tp=" + std::to_string(p.tp) + (p.ep > 1 ? ", parallel.ep=" + std::to_string(p.ep) : "") +
           (p.pp > 1 ? ", parallel.pp=" + std::to_string(p.pp) : "");
  };
  const bool move_a = is_deterministic(a.config.numerics);
  SB_CHECK(move_a || is_deterministic(b.config.numerics), "samebits trace: ", path_a, " (", layout(pa), ") and ",
           path_b, " (", layout(pb),
           ") split their ops differently and neither runs deterministic numerics, the only ones whose bits do "
           "not depend on the layout; trace runs of one layout, or one of them in numerics.mode = deterministic");
  ReplaySetup& moved = move_a ? a : b;
  const ReplaySetup& other = move_a ? b : a;
  moved.relayout = std::string("replayed at ") + (move_a ? "B" : "A") + "'s layout (recorded at " +
                   layout(moved.config.parallel) + ", " + std::to_string(moved.world) +
                   (moved.world == 1 ? " process" : " ranks") +
                   "; deterministic numerics give the same bits at any layout)";
  moved.config.parallel = other.config.parallel;
  moved.world = other.world;
}

TrainerState reachable_state(const run::RunReader& a, const ReplaySetup& setup, int64_t step, std::string& source) {
  const std::vector<int64_t> states = a.state_steps();
  int64_t from = 0;
  for (int64_t s : states)
    if (s <= step) from = std::max(from, s);
  const std::vector<float> initial_weights = io::load_initial_weights(setup.config);
  const std::unique_ptr<Backend> backend = backend_for(setup);
  const std::unique_ptr<Communicator> comm = make_local_communicator();
  Trainer trainer(setup.config, *backend, *comm, trainer_options(setup, initial_weights));
  if (from > 0) trainer.import_state(a.read_state(from));
  source =
      from > 0 ? "the state " + a.path() + " keeps of step " + std::to_string(from) : std::string("the initialisation");
  if (step > from) source += ", then steps " + std::to_string(from + 1) + "–" + std::to_string(step) + " replayed";
  while (trainer.steps_done() < step) trainer.step();
  if (step > 0) {
    const std::vector<uint64_t> recorded = a.series_rows<uint64_t>("series/param_fingerprint", uint64_t(step - 1), 1);
    SB_CHECK(recorded == trainer.param_fingerprints(), a.path(), ": no reachable state of step ", step,
             ": its replay from ", source, " does not reproduce the parameters the file records there");
  }
  return trainer.export_state();
}

std::vector<trace::Row> replay_stream(const ReplaySetup& setup, const TrainerState& state, int64_t step,
                                      std::vector<uint64_t>* fingerprints) {
  SB_CHECK(state.step == step - 1, "trace: a state of step ", state.step, " given to replay step ", step);
  const std::vector<float> initial_weights = io::load_initial_weights(setup.config);
  std::vector<std::vector<trace::Row>> ranks(static_cast<size_t>(setup.world));
  ThreadWorld world(setup.world);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < setup.world; ++r) comms.push_back(setup.world == 1 ? make_local_communicator() : world.rank(r));
  const auto body = [&](int r) {
    const std::unique_ptr<Backend> inner = backend_for(setup);
    TracingBackend backend(*inner);
    Trainer trainer(setup.config, backend, *comms[size_t(r)], trainer_options(setup, initial_weights));
    trainer.import_state(state);
    trace::Recorder recorder(true);
    backend.trace(&recorder);
    trainer.step();
    backend.trace(nullptr);
    ranks[size_t(r)] = std::move(recorder.rows());
    const std::vector<uint64_t> params = trainer.param_fingerprints();  // every rank: gathers shards
    if (r == 0 && fingerprints != nullptr) *fingerprints = params;
  };
  if (setup.world == 1) body(0);
  else run_ranks(setup.world, body);
  // World rank = tp rank + tp · (dp rank + DP · stage): ranks 0 … tp−1 are data-parallel rank 0's
  // tensor-parallel group (of the first stage); the other data-parallel groups are its replicas.
  // Under expert parallelism the ep consecutive data-parallel ranks of the first group hold the
  // expert shards, so ranks 0 … tp·ep−1 hold every tensor once.
  const size_t group = static_cast<size_t>(setup.config.parallel.tp * setup.config.parallel.ep);
  if (setup.config.parallel.pp > 1)
    return pipeline_order(std::move(ranks), group, static_cast<size_t>(setup.config.parallel.pp));
  // The leaves' rows of every rank (each leaf is one tensor-parallel group's, its ranks' rows rank
  // by rank; under expert parallelism an expert's rows of a leaf are its rank's, traced with the
  // leaf), the other rows those of ranks 0 … group−1.
  std::vector<trace::Row> rows;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (trace::Row& row : ranks[r])
      if (row.leaf >= 0 || r < group) rows.push_back(std::move(row));
  return trace::canonical_order(std::move(rows));
}

}  // namespace sb::cli
