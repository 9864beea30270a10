// The cost of recording a run (docs/FORMAT.md, "Logging overhead"): training steps of the default
// model with all recording off, with fingerprints and a RunWriter row per step, and with the
// statistics too, on one thread; the three trainers alternate step by step and the medians of the
// per-step process CPU times are compared (robust to other work on the machine). Also
// the time of one checkpoint (checkpoint file + run-file commit), amortized over
// train.checkpoint_every steps in the printed total.
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/train/run_header.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

using namespace sb;
// Process CPU time: with one thread, the step's own cost.
struct Clock {
  using time_point = double;
  static double now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
};

// The default experiment (leaf_size 1: Config's default, 1024 tokens per step; 4: default.ini's,
// 4096), on one thread: the process CPU time of a step is then its cost, whatever else runs.
Config default_config(int leaf_size) {
  Config c;
  c.data.leaf_size = leaf_size;
  c.run.threads = 1;
  return c;
}

double seconds_since(double t) { return Clock::now() - t; }

void BM_logging_overhead(benchmark::State& state) {
  const Config config = default_config(static_cast<int>(state.range(0)));
  // off: no statistics, no fingerprints, no run file. rows: fingerprints and a run-file row per
  // step (what the run store adds). full: rows plus the per-tensor statistics and leaf variance.
  TrainerOptions off, rows;
  off.statistics = off.fingerprints = false;
  rows.statistics = false;
  Trainer quiet(config, off), plain(config, rows), full(config);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("sb_bench_run_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  run::RunWriter plain_writer = run::RunWriter::create(dir + "/plain.h5", run_header(config, plain));
  run::RunWriter full_writer = run::RunWriter::create(dir + "/full.h5", run_header(config, full));
  quiet.step();  // first touch of every buffer
  plain_writer.record(plain.step());
  full_writer.record(full.step());

  std::vector<double> quiet_s, plain_s, full_s;  // (steps) CPU seconds of each step
  for (auto _ : state) {
    double t = Clock::now();
    benchmark::DoNotOptimize(quiet.step().stats.loss);
    quiet_s.push_back(seconds_since(t));
    t = Clock::now();
    plain_writer.record(plain.step());
    plain_s.push_back(seconds_since(t));
    t = Clock::now();
    full_writer.record(full.step());
    full_s.push_back(seconds_since(t));
  }
  const double t = Clock::now();
  full_writer.checkpoint(full.export_state());
  const double checkpoint_s = seconds_since(t);
  std::filesystem::remove_all(dir);

  // Medians: robust to the odd step slowed by other work on the machine.
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double q = median(quiet_s), p = median(plain_s), f = median(full_s);
  const double every = double(config.train.checkpoint_every);
  const double total = 100.0 * (f + checkpoint_s / every - q) / q;
  state.counters["off_ms"] = 1e3 * q;
  state.counters["rows_ms"] = 1e3 * p;
  state.counters["full_ms"] = 1e3 * f;
  state.counters["checkpoint_ms"] = 1e3 * checkpoint_s;
  state.counters["overhead_pct"] = total;
  std::printf(
      "leaf_size %lld: step %.1f ms off | %.1f ms with fingerprints and run-file rows (%+.2f %%) | "
      "%.1f ms with statistics too (%+.2f %%); checkpoint + commit %.1f ms every %.0f steps; "
      "total %+.2f %%\n",
      (long long)state.range(0), 1e3 * q, 1e3 * p, 100.0 * (p / q - 1), 1e3 * f, 100.0 * (f / q - 1),
      1e3 * checkpoint_s, every, total);
}
BENCHMARK(BM_logging_overhead)->ArgName("leaf_size")->Arg(1)->Arg(4)->Iterations(40)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
