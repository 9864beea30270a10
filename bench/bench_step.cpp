// Whole training-step time of the default model (GPT 4×128, seq 128, vocab 256; 8 leaves of one
// sequence, Config's default, and of four, experiments/configs/default.ini) with Muon and with
// AdamW, statistics on and off; the optimizer step alone; the optimizer state bytes. Deterministic numerics, OpenMP
// threads as the machine gives. After the runs it prints the ratios (the announcement claims Muon at 98 % of AdamW's
// throughput); docs/TRAINING.md records them. And the Mixture-of-Experts step of experiments/configs/moe_tiny.ini
// against its dense twin of about equal active parameters (default.ini; 3 experts of width 176 a token against the
// MLP's 512).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

using namespace sb;

Config default_config(bool adamw, int leaf_size = 1) {
  Config c;  // the default experiment
  c.data.leaf_size = leaf_size;
  if (adamw) {
    c.optim.name = OptimizerName::adamw;
    c.optim.lr = 3e-3;
  }
  c.train.eval_every = 0;
  return c;
}

std::string label(bool adamw, bool stats, int leaf_size) {
  return std::string(adamw ? "adamw" : "muon") + (stats ? ", stats on" : ", stats off") + ", " +
         std::to_string(leaf_size * 8 * 128) + " tokens";
}

void BM_train_step(benchmark::State& state) {
  const bool adamw = state.range(0) != 0;
  const bool stats = state.range(1) != 0;
  const int leaf_size = static_cast<int>(state.range(2));
  const Config config = default_config(adamw, leaf_size);
  TrainerOptions options;
  options.statistics = stats;
  options.fingerprints = stats;
  Trainer trainer(config, options);
  trainer.step();  // first touch of every buffer
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step().stats.loss);
  const int64_t tokens = config.data.leaves * config.data.leaf_size * config.model.seq_len;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * tokens);
  state.counters["state_bytes"] = static_cast<double>(trainer.optimizer().state_bytes());
  state.SetLabel(label(adamw, stats, leaf_size));
}
BENCHMARK(BM_train_step)
    ->ArgNames({"adamw", "stats", "leaf_size"})
    ->Args({0, 0, 1})
    ->Args({1, 0, 1})
    ->Args({0, 1, 1})
    ->Args({1, 1, 1})
    ->Args({0, 0, 4})
    ->Args({1, 0, 4})
    ->Args({0, 1, 4})
    ->Args({1, 1, 4})
    ->MinTime(3.0)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// moe_tiny.ini's step (8 routed experts, top 2, 1 shared, width 176) or its dense twin, Muon, statistics on.
void BM_moe_step(benchmark::State& state) {
  const bool moe = state.range(0) != 0;
  Config config = default_config(false, 4);
  if (moe) {
    config.model.moe_experts = 8, config.model.moe_top_k = 2, config.model.moe_shared_experts = 1;
    config.model.moe_ffn_dim = 176;
  }
  Trainer trainer(config, TrainerOptions{});
  trainer.step();
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step().stats.loss);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * config.data.leaves * config.data.leaf_size *
                          config.model.seq_len);
  state.SetLabel(moe ? "moe_tiny step" : "dense twin step");
}
BENCHMARK(BM_moe_step)
    ->ArgNames({"moe"})
    ->Arg(1)
    ->Arg(0)
    ->MinTime(3.0)
    ->MeasureProcessCPUTime()
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
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Console output, plus each label's fastest repetition (--benchmark_repetitions=N: the least
// disturbed by other load on the machine) for the ratio tables: wall time, and the CPU time of
// all the process's threads (steadier than wall time on a shared machine).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> seconds;      // label -> real seconds per iteration
  std::map<std::string, double> cpu_seconds;  // label -> process CPU seconds per iteration
  std::map<std::string, double> state_bytes;  // label -> optimizer state bytes
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const double unit = benchmark::GetTimeUnitMultiplier(r.time_unit);
      keep_min(seconds, r.report_label, r.GetAdjustedRealTime() / unit);
      keep_min(cpu_seconds, r.report_label, r.GetAdjustedCPUTime() / unit);
      const auto bytes = r.counters.find("state_bytes");
      if (bytes != r.counters.end()) state_bytes[r.report_label] = bytes->second.value;
    }
  }
  static void keep_min(std::map<std::string, double>& m, const std::string& key, double v) {
    const auto it = m.find(key);
    m[key] = it == m.end() ? v : std::min(it->second, v);
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
  auto& c = reporter.cpu_seconds;
  // Throughput of a over b = time of b / time of a, by wall time and by process CPU time.
  auto ratio = [&](const char* what, const std::string& a, const std::string& b) {
    if (s.count(a) && s.count(b)) {
      std::printf("  %-62s %6.3f %6.3f\n", what, s[b] / s[a], c[b] / c[a]);
    }
  };
  std::printf("\nthroughput ratios (higher: the first is faster)%*s wall    CPU\n", 16, "");
  for (int ls : {1, 4}) {
    const std::string tokens = " (" + std::to_string(ls * 8 * 128) + " tokens/step)";
    ratio(("muon / adamw, statistics off" + tokens).c_str(), label(false, false, ls), label(true, false, ls));
    ratio(("muon / adamw, statistics on" + tokens).c_str(), label(false, true, ls), label(true, true, ls));
    ratio(("muon: statistics on / off" + tokens).c_str(), label(false, true, ls), label(false, false, ls));
    ratio(("adamw: statistics on / off" + tokens).c_str(), label(true, true, ls), label(true, false, ls));
  }
  ratio("optimizer update alone: muon / adamw", "muon update", "adamw update");
  ratio("moe_tiny / its dense twin (equal active parameters)", "moe_tiny step", "dense twin step");
  auto& b = reporter.state_bytes;
  if (b.count("muon update") && b.count("adamw update")) {
    std::printf("  optimizer state bytes: muon %.0f, adamw %.0f (ratio %.3f)\n", b["muon update"], b["adamw update"],
                b["muon update"] / b["adamw update"]);
  }
  return 0;
}
