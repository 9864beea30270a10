// Whole training-step time of the default experiment (GPT 4×128, seq 128, vocab 256, 8 leaves of
// one sequence) with Muon and with AdamW, statistics on and off; the optimizer step alone; the
// optimizer state bytes. Deterministic numerics, OpenMP threads as the machine gives. After the
// runs it prints the ratios (the announcement claims Muon at 98 % of AdamW's throughput);
// docs/TRAINING.md records them.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

using namespace sb;

Config default_config(bool adamw) {
  Config c;  // the default experiment
  if (adamw) {
    c.optim.name = OptimizerName::adamw;
    c.optim.lr = 3e-3;
  }
  c.train.eval_every = 0;
  return c;
}

std::string label(bool adamw, bool stats) {
  return std::string(adamw ? "adamw" : "muon") + (stats ? ", stats on" : ", stats off");
}

void BM_train_step(benchmark::State& state) {
  const bool adamw = state.range(0) != 0;
  const bool stats = state.range(1) != 0;
  const Config config = default_config(adamw);
  TrainerOptions options;
  options.statistics = stats;
  options.fingerprints = stats;
  Trainer trainer(config, options);
  trainer.step();  // first touch of every buffer
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step().stats.loss);
  const int64_t tokens = config.data.leaves * config.data.leaf_size * config.model.seq_len;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * tokens);
  state.counters["state_bytes"] = static_cast<double>(trainer.optimizer().state_bytes());
  state.SetLabel(label(adamw, stats));
}
BENCHMARK(BM_train_step)
    ->ArgNames({"adamw", "stats"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->MinTime(3.0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The optimizer's update alone, on the gradient of one leaf.
void BM_optimizer_step(benchmark::State& state) {
  const bool adamw = state.range(0) != 0;
  const Config config = default_config(adamw);
  auto backend = make_cpu_backend(to_numerics(config));
  GPT model(config.model, 1, *backend);
  model.init(config.train.seed);
  std::vector<int32_t> tokens(static_cast<size_t>(config.model.seq_len) + 1);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 37 + 11) % 256);
  model.forward(tokens.data());
  model.backward();
  auto optimizer = make_optimizer(config.optim, model.params(), *backend, config.train.precision);
  StepContext ctx;
  ctx.compute_stats = false;
  for (auto _ : state) {
    optimizer->step(model.weights().data_as<float>(), model.grads().data_as<float>(), ctx);
    ++ctx.step;
    benchmark::ClobberMemory();
  }
  state.counters["state_bytes"] = static_cast<double>(optimizer->state_bytes());
  state.SetLabel(adamw ? "adamw update" : "muon update");
}
BENCHMARK(BM_optimizer_step)
    ->ArgNames({"adamw"})
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> seconds;      // label -> real seconds per iteration
  std::map<std::string, double> state_bytes;  // label -> optimizer state bytes
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      seconds[r.report_label] = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      const auto it = r.counters.find("state_bytes");
      if (it != r.counters.end()) state_bytes[r.report_label] = it->second.value;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  auto& s = reporter.seconds;
  // Throughput of a over b = time of b / time of a.
  auto ratio = [&](const char* what, const std::string& a, const std::string& b) {
    if (s.count(a) && s.count(b)) std::printf("  %-52s %.3f\n", what, s[b] / s[a]);
  };
  std::printf("\nthroughput ratios (higher: the first is faster):\n");
  ratio("muon / adamw, whole step, statistics off", label(false, false), label(true, false));
  ratio("muon / adamw, whole step, statistics on", label(false, true), label(true, true));
  ratio("muon: statistics on / off", label(false, true), label(false, false));
  ratio("adamw: statistics on / off", label(true, true), label(true, false));
  ratio("optimizer update alone: muon / adamw", "muon update", "adamw update");
  auto& b = reporter.state_bytes;
  if (b.count("muon update") && b.count("adamw update")) {
    std::printf("  optimizer state bytes: muon %.0f, adamw %.0f (ratio %.3f)\n", b["muon update"],
                b["adamw update"], b["muon update"] / b["adamw update"]);
  }
  return 0;
}
