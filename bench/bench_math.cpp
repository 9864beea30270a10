// The price of samebits math next to libm on the same data: sb::det::exp, log, tanh, erf, sin,
// cos against std::expf … (glibc, vectorizable, not reproducible across libraries) over 64K
// floats in each function's working range. docs/MATH.md records the ratios.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "samebits/det/math.hpp"

namespace {

constexpr size_t kN = 65536;

// Inputs uniform in [lo, hi), fixed seed. (kN)
std::vector<float> inputs(float lo, float hi) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x(kN);
  for (float& v : x) v = u(rng);
  return x;
}

template <typename F>
void run(benchmark::State& state, const std::vector<float>& x, F f) {
  std::vector<float> y(kN);  // (kN)
  for (auto _ : state) {
    for (size_t i = 0; i < kN; ++i) y[i] = f(x[i]);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kN));
}

// Softmax and cross-entropy arguments (exp of x − max ≤ 0; log of probabilities).
const std::vector<float>& exp_args() {
  static const std::vector<float> x = inputs(-30.0f, 0.0f);
  return x;
}
const std::vector<float>& log_args() {
  static const std::vector<float> x = inputs(1e-6f, 1.0f);
  return x;
}
// GELU arguments (tanh of √(2/π)(x + 0.044715x³), erf of x/√2).
const std::vector<float>& act_args() {
  static const std::vector<float> x = inputs(-6.0f, 6.0f);
  return x;
}
// Angles, and huge ones (exact reduction path).
const std::vector<float>& angle_args() {
  static const std::vector<float> x = inputs(-100.0f, 100.0f);
  return x;
}
const std::vector<float>& huge_args() {
  static const std::vector<float> x = inputs(1e6f, 1e30f);
  return x;
}

void BM_libm_exp(benchmark::State& s) {
  run(s, exp_args(), [](float v) { return std::exp(v); });
}
void BM_sb_exp(benchmark::State& s) {
  run(s, exp_args(), [](float v) { return sb::det::exp(v); });
}
void BM_libm_log(benchmark::State& s) {
  run(s, log_args(), [](float v) { return std::log(v); });
}
void BM_sb_log(benchmark::State& s) {
  run(s, log_args(), [](float v) { return sb::det::log(v); });
}
void BM_libm_tanh(benchmark::State& s) {
  run(s, act_args(), [](float v) { return std::tanh(v); });
}
void BM_sb_tanh(benchmark::State& s) {
  run(s, act_args(), [](float v) { return sb::det::tanh(v); });
}
void BM_libm_erf(benchmark::State& s) {
  run(s, act_args(), [](float v) { return std::erf(v); });
}
void BM_sb_erf(benchmark::State& s) {
  run(s, act_args(), [](float v) { return sb::det::erf(v); });
}
void BM_libm_sin(benchmark::State& s) {
  run(s, angle_args(), [](float v) { return std::sin(v); });
}
void BM_sb_sin(benchmark::State& s) {
  run(s, angle_args(), [](float v) { return sb::det::sin(v); });
}
void BM_libm_sin_huge(benchmark::State& s) {
  run(s, huge_args(), [](float v) { return std::sin(v); });
}
void BM_sb_sin_huge(benchmark::State& s) {
  run(s, huge_args(), [](float v) { return sb::det::sin(v); });
}
void BM_libm_cos(benchmark::State& s) {
  run(s, angle_args(), [](float v) { return std::cos(v); });
}
void BM_sb_cos(benchmark::State& s) {
  run(s, angle_args(), [](float v) { return sb::det::cos(v); });
}

}  // namespace

BENCHMARK(BM_libm_exp);
BENCHMARK(BM_sb_exp);
BENCHMARK(BM_libm_log);
BENCHMARK(BM_sb_log);
BENCHMARK(BM_libm_tanh);
BENCHMARK(BM_sb_tanh);
BENCHMARK(BM_libm_erf);
BENCHMARK(BM_sb_erf);
BENCHMARK(BM_libm_sin);
BENCHMARK(BM_sb_sin);
BENCHMARK(BM_libm_sin_huge);
BENCHMARK(BM_sb_sin_huge);
BENCHMARK(BM_libm_cos);
BENCHMARK(BM_sb_cos);

BENCHMARK_MAIN();
