// The price of determinism in the primitives, each next to its ordinary counterpart on the same
// data: ExactSum vs a plain float loop, FixedAccumulator::add vs y[i] += x[i], lane32_sum /
// lane32_sumsq vs naive loops; 1M and 16M floats; one step of the gradient accumulator
// (8 leaves added, rounded once): BlockAccumulator vs FixedAccumulator's 4 limbs; two leaves added
// one by one vs in one add_pair; the binned exact Σx² and Σx (core/exact_norm.hpp) per 2^16-element
// block and over 16M floats. docs/PRIMITIVES.md and docs/PERFORMANCE.md record the ratios.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "samebits/core/exact_norm.hpp"
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

// Gradient-like values as a model's gradient holds them: normal, scale 3e-3 (a 2^16-element
// block spans about 20 binades, so the binned sums' windows and the accumulator's one-word blocks
// hold it; data() above spans 40 binades, the slow paths). (n)
std::vector<float> normal_gradient(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3e-3f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
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

// Two leaves of normal_gradient into the block accumulator: add(x), add(y) (range 0) or
// add_pair(x, y) (range 1).
void BM_block_two_leaves(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> x = normal_gradient(n, 1), y = normal_gradient(n, 2);
  sb::det::BlockAccumulator acc(n);
  acc.add(x.data());
  for (auto _ : state) {
    if (state.range(1) == 0) {
      acc.add(x.data());
      acc.add(y.data());
    } else {
      acc.add_pair(x.data(), y.data());
    }
  }
  set_counters(state, 2 * n);
}

// The binned exact sums of normal_gradient, block by block (kBinnedBlock = 2^16 floats: n of them
// in cache, 2^24 from memory).
template <bool kSquares>
void binned(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<float> g = normal_gradient(n, 3);
  const float* x = g.data();
  for (auto _ : state) {
    double total = 0.0;
    for (size_t b = 0; b < n; b += sb::kBinnedBlock) {
      const size_t len = std::min(sb::kBinnedBlock, n - b);
      total += (kSquares ? sb::binned_sum_of_squares(x + b, len) : sb::binned_sum(x + b, len)).to_f64();
    }
    benchmark::DoNotOptimize(total);
  }
  set_counters(state, n);
}
void BM_binned_sum_of_squares(benchmark::State& state) { binned<true>(state); }
void BM_binned_sum(benchmark::State& state) { binned<false>(state); }

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
BENCHMARK(BM_block_two_leaves)->Args({kLarge, 0})->Args({kLarge, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_binned_sum_of_squares)->Arg(sb::kBinnedBlock)->Arg(kLarge)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_binned_sum)->Arg(sb::kBinnedBlock)->Arg(kLarge)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
