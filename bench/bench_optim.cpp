// bench_optim: one optimizer step, Muon versus AdamW, on the default model's parameters (GPT with
// 4 layers, n_embd 128, 4 heads, vocab 256, seq_len 128; gpt_param_layout), CPU backend in
// deterministic numerics. Counters: state_bytes (Muon: one buffer per matrix and two per other
// tensor; AdamW: two per tensor) and params. Compare the rows of one run (docs/OPTIM.md §6).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/optim/optimizer.hpp"

namespace {

void optimizer_step(benchmark::State& state, sb::OptimizerName name, sb::Precision precision, bool stats) {
  const sb::GPTConfig cfg;  // the default model
  const std::vector<sb::ParamView> layout = sb::gpt_param_layout(cfg);
  size_t flat = 0, params = 0;
  for (const sb::ParamView& p : layout) {
    flat = std::max(flat, p.offset + p.numel);
    params += p.numel;
  }
  auto backend = sb::make_cpu_backend(sb::Numerics::deterministic(precision));
  sb::OptimConfig config;
  config.name = name;
  if (name == sb::OptimizerName::adamw) config.lr = 3e-3;
  auto opt = sb::make_optimizer(config, layout, *backend, precision);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> w(flat), g(flat);
  for (float& x : w) x = dist(rng);
  for (float& x : g) x = dist(rng);
  sb::StepContext ctx;
  ctx.compute_stats = stats;
  for (auto _ : state) {
    opt->step(w.data(), g.data(), ctx);
    ++ctx.step;
    benchmark::DoNotOptimize(w.data());
  }
  state.counters["state_bytes"] = static_cast<double>(opt->state_bytes());
  state.counters["params"] = static_cast<double>(params);
}

}  // namespace

BENCHMARK_CAPTURE(optimizer_step, adamw, sb::OptimizerName::adamw, sb::Precision::fp32, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(optimizer_step, muon_fp32, sb::OptimizerName::muon, sb::Precision::fp32, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(optimizer_step, muon_bf16, sb::OptimizerName::muon, sb::Precision::bf16, false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(optimizer_step, adamw_stats, sb::OptimizerName::adamw, sb::Precision::fp32, true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(optimizer_step, muon_fp32_stats, sb::OptimizerName::muon, sb::Precision::fp32, true)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
