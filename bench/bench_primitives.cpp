// The price of determinism in the primitives, each next to its ordinary counterpart on the same
// data: ExactSum vs a plain float loop, FixedAccumulator::add vs y[i] += x[i], lane32_sum /
// lane32_sumsq vs naive loops; 1M and 16M floats; one step of the gradient accumulator
// (8 leaves added, rounded once): BlockAccumulator vs FixedAccumulator's 4 limbs. docs/PRIMITIVES.md
// records the ratios.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "samebits/det/block_accumulator.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/lane32.hpp"

namespace {

// Gradient-like values: random signs, magnitudes 2^-30 .. 2^10. (n)
const std::vector<float>& data(size_t n) {
  static std::vector<float> x;
  if (x.size() != n) {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> exponent(-30, 10);
    x.resize(n);
    for (float& v : x) {
      const float m = static_cast<float>((rng() >> 40) | (1ull << 23));  // [2^23, 2^24)
      v = std::ldexp(m, exponent(rng) - 23) * ((rng() & 1) ? -1.0f : 1.0f);
    }
  }
  return x;
}

void set_counters(benchmark::State& state, size_t n) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}

// Baseline: one float accumulator, ascending i (what a plain loop does without fast-math).
void BM_float_sum(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  for (auto _ : state) {
    float s = 0.0f;
    for (size_t i = 0; i < n; ++i) s += x[i];
    benchmark::DoNotOptimize(s);
  }
  set_counters(state, n);
}

void BM_exact_sum(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  for (auto _ : state) {
    sb::det::ExactSum s;
    s.add(x, n);
    benchmark::DoNotOptimize(s.to_f32());
  }
  set_counters(state, n);
}

void BM_lane32_sum(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  for (auto _ : state) benchmark::DoNotOptimize(sb::det::lane32_sum(x, n));
  set_counters(state, n);
}

// Baseline for lane32_sumsq: one fma chain, ascending i.
void BM_float_sumsq(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  for (auto _ : state) {
    float s = 0.0f;
    for (size_t i = 0; i < n; ++i) s = sb::det::fma_f32(x[i], x[i], s);
    benchmark::DoNotOptimize(s);
  }
  set_counters(state, n);
}

void BM_lane32_sumsq(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  for (auto _ : state) benchmark::DoNotOptimize(sb::det::lane32_sumsq(x, n));
  set_counters(state, n);
}

// Baseline for FixedAccumulator::add: the float accumulation it replaces, OpenMP like it.
void BM_float_add(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  std::vector<float> y(n, 0.0f);  // (n)
  float* yp = y.data();
  const std::ptrdiff_t count = static_cast<std::ptrdiff_t>(n);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < count; ++i) yp[i] += x[i];
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

void BM_fixed_add(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  sb::det::FixedAccumulator acc(n);
  for (auto _ : state) {
    acc.add(x);
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

// Once per step: the rounding of the accumulated gradient back to fp32.
void BM_fixed_round(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = data(n).data();
  sb::det::FixedAccumulator acc(n);
  for (int l = 0; l < 4; ++l) acc.add(x);
  std::vector<float> out(n);  // (n)
  for (auto _ : state) {
    acc.round_to_fp32(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n);
}

// A step's 8 leaves of gradient-like values: random signs, magnitudes 2^-20 .. 2^-8 (the spread
// of a real gradient block). (8, n)
const std::vector<float>& leaves(size_t n) {
  static std::vector<float> x;
  if (x.size() != 8 * n) {
    std::mt19937_64 rng(8);
    std::uniform_int_distribution<int> exponent(-20, -8);
    x.resize(8 * n);
    for (float& v : x) {
      const float m = static_cast<float>((rng() >> 40) | (1ull << 23));
      v = std::ldexp(m, exponent(rng) - 23) * ((rng() & 1) ? -1.0f : 1.0f);
    }
  }
  return x;
}

// One step of the rule-4 accumulator: clear, add 8 leaves, round once.
template <class Acc>
void accumulator_step(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const float* x = leaves(n).data();
  Acc acc(n);
  std::vector<float> out(n);  // (n)
  for (auto _ : state) {
    acc.clear();
    for (size_t l = 0; l < 8; ++l) acc.add(x + l * n);
    acc.round_to_fp32(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, 8 * n);
}
void BM_fixed_step(benchmark::State& state) { accumulator_step<sb::det::FixedAccumulator>(state); }
void BM_block_step(benchmark::State& state) { accumulator_step<sb::det::BlockAccumulator>(state); }

constexpr int64_t kSmall = int64_t{1} << 20, kLarge = int64_t{1} << 24;

}  // namespace

BENCHMARK(BM_float_sum)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_exact_sum)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lane32_sum)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_float_sumsq)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lane32_sumsq)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_float_add)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fixed_add)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fixed_round)->Arg(kSmall)->Arg(kLarge)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fixed_step)->Arg(kSmall)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_block_step)->Arg(kSmall)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
