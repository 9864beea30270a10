// The price of determinism in the training core: forward + backward tokens/s of the default GPT
// (4 layers, 128 wide, 4 heads, seq 128, vocab 256, one sequence per leaf) with every switch
// canonical (deterministic) and with gemm=vendor reduce=native (vendor), on 1 and 2 OpenMP
// threads. After the runs it prints the ratios; docs/CORE.md records them.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"

namespace {

using namespace sb;

void BM_gpt_forward_backward(benchmark::State& state) {
  const bool vendor = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  omp_set_num_threads(threads);
  GPTConfig cfg;  // the defaults: vocab 256, seq 128, 4 layers, 4 heads, 128 wide
  auto be = make_cpu_backend(vendor ? Numerics::vendor() : Numerics::deterministic());
  GPT model(cfg, 1, *be);
  model.init(1);
  std::vector<int32_t> tokens(static_cast<size_t>(cfg.seq_len) + 1);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 37 + 11) % cfg.vocab);
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.forward(tokens.data()));
    model.backward();
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * cfg.seq_len);
  state.SetLabel(std::string(vendor ? "vendor" : "deterministic") + ", " + std::to_string(threads) + " thread" +
                 (threads > 1 ? "s" : ""));
}
BENCHMARK(BM_gpt_forward_backward)
    ->ArgNames({"vendor", "threads"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Console output, plus the tokens/s of each run for the ratio table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> tokens_per_s;  // label -> tokens/s
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const auto it = r.counters.find("items_per_second");
      if (it != r.counters.end()) tokens_per_s[r.report_label] = it->second.value;
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
  auto& t = reporter.tokens_per_s;
  auto ratio = [&](const char* a, const char* b) {
    if (t.count(a) && t.count(b)) std::printf("  %-44s %.3f\n", (std::string(a) + " / " + b).c_str(), t[a] / t[b]);
  };
  std::printf("\nforward+backward tokens/s ratios:\n");
  for (const auto& [label, v] : t) std::printf("  %-30s %10.0f tokens/s\n", label.c_str(), v);
  ratio("deterministic, 1 thread", "vendor, 1 thread");
  ratio("deterministic, 2 threads", "vendor, 2 threads");
  ratio("deterministic, 2 threads", "deterministic, 1 thread");
  ratio("vendor, 2 threads", "vendor, 1 thread");
  return 0;
}
