// Tests only: the error of samebits' fp32 math (samebits/det/math.hpp) in ULPs against MPFR's
// correctly rounded value of the exact function, and the input sets the ULP sweeps run over.
// Not part of any computation: the reference of the math tests (docs/CONTRACT.md rule 7).
#pragma once
#include <mpfr.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "samebits/det/math.hpp"

namespace sb::test {

enum class MathFn { exp, log, tanh, erf, sin, cos, cos_2pi };

constexpr MathFn kMathFns[] = {MathFn::exp, MathFn::log, MathFn::tanh,   MathFn::erf,
                               MathFn::sin, MathFn::cos, MathFn::cos_2pi};

inline const char* math_name(MathFn f) {
  switch (f) {
    case MathFn::exp: return "exp";
    case MathFn::log: return "log";
    case MathFn::tanh: return "tanh";
    case MathFn::erf: return "erf";
    case MathFn::sin: return "sin";
    case MathFn::cos: return "cos";
    case MathFn::cos_2pi: return "cos_2pi";
  }
  return "?";
}

// The contract's bound (docs/MATH.md): exp and log within 1 ULP, the others within 2.
inline double math_ulp_bound(MathFn f) { return (f == MathFn::exp || f == MathFn::log) ? 1.0 : 2.0; }

inline float math_eval(MathFn f, float x) {
  switch (f) {
    case MathFn::exp: return sb::det::exp(x);
    case MathFn::log: return sb::det::log(x);
    case MathFn::tanh: return sb::det::tanh(x);
    case MathFn::erf: return sb::det::erf(x);
    case MathFn::sin: return sb::det::sin(x);
    case MathFn::cos: return sb::det::cos(x);
    case MathFn::cos_2pi: return sb::det::cos_2pi(x);
  }
  return 0.0f;
}

inline float f32_of_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

inline uint32_t bits_of_f32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

// MPFR evaluation at 160 bits; ulp_error(f, x, y) = |y − f(x)| / ulp(f(x)), where ulp is the fp32
// spacing at f(x) (2^-149 below 2^-126). 0 when y and f(x) are the same Inf or both NaN; +Inf when
// one is NaN and the other not, or y is ±Inf and f(x) does not round to it.
class MpfrMath {
 public:
  MpfrMath() { mpfr_inits2(160, x_, v_, d_, static_cast<mpfr_ptr>(nullptr)); }
  ~MpfrMath() { mpfr_clears(x_, v_, d_, static_cast<mpfr_ptr>(nullptr)); }
  MpfrMath(const MpfrMath&) = delete;
  MpfrMath& operator=(const MpfrMath&) = delete;

  double ulp_error(MathFn f, float x, float y) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    mpfr_set_flt(x_, x, MPFR_RNDN);
    switch (f) {
      case MathFn::exp: mpfr_exp(v_, x_, MPFR_RNDN); break;
      case MathFn::log: mpfr_log(v_, x_, MPFR_RNDN); break;
      case MathFn::tanh: mpfr_tanh(v_, x_, MPFR_RNDN); break;
      case MathFn::erf: mpfr_erf(v_, x_, MPFR_RNDN); break;
      case MathFn::sin: mpfr_sin(v_, x_, MPFR_RNDN); break;
      case MathFn::cos: mpfr_cos(v_, x_, MPFR_RNDN); break;
      case MathFn::cos_2pi: mpfr_cosu(v_, x_, 1, MPFR_RNDN); break;
    }
    if (std::isnan(y) || mpfr_nan_p(v_)) return (std::isnan(y) && mpfr_nan_p(v_)) ? 0.0 : kInf;
    if (std::isinf(y) || mpfr_inf_p(v_)) return mpfr_get_flt(v_, MPFR_RNDN) == y ? 0.0 : kInf;
    if (mpfr_zero_p(v_)) return y == 0.0f ? 0.0 : kInf;
    long e = mpfr_get_exp(v_) - 24;  // v = m·2^exp with m in [1/2, 1)
    if (e < -149) e = -149;
    if (e > 104) e = 104;
    mpfr_set_flt(d_, y, MPFR_RNDN);
    mpfr_sub(d_, d_, v_, MPFR_RNDN);
    mpfr_mul_2si(d_, d_, -e, MPFR_RNDN);
    return std::fabs(mpfr_get_d(d_, MPFR_RNDN));
  }

 private:
  mpfr_t x_, v_, d_;
};

// splitmix64: the fixed-seed generator of the random halves of the sweeps.
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {  // in [lo, hi]
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1p-24f;
  }
};

// Inputs where each function is hardest or changes form: limits, thresholds, branch edges.
inline std::vector<float> math_edge_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> base = {0.0f,
                             0x1p-149f,
                             0x1p-126f,
                             0x1.fffffcp-127f,
                             0x1p-12f,
                             0x1p-25f,
                             0.5f,
                             0.875f,
                             1.0f,
                             2.0f,
                             3.92f,
                             3.9192058f,
                             4.0f,
                             9.0f,
                             9.02f,
                             0.7853981f,
                             0.78539819f,
                             1.5707964f,
                             3.1415927f,
                             0x1p20f,
                             0x1.fffffep19f,
                             0x1p24f,
                             0x1p23f,
                             0x1.921fb6p+100f,
                             16367173.0f * 0x1p72f,
                             0x1.62e42ep6f,
                             0x1.62e430p6f,
                             103.97208f,
                             103.97207f,
                             104.0f,
                             87.336548f,
                             0x1.fffffep127f,
                             inf,
                             std::numeric_limits<float>::quiet_NaN(),
                             0.25f,
                             0.75f,
                             0.125f,
                             0x1p-30f,
                             1.0f - 0x1p-24f,
                             1.0f + 0x1p-23f,
                             1.4142135f,
                             1.4142137f};
  std::vector<float> out;
  for (float x : base) {
    out.push_back(x);
    out.push_back(-x);
    out.push_back(std::nextafter(x, inf));
    out.push_back(std::nextafter(x, -inf));
  }
  return out;
}

// The random half of a sweep: values where `f` does real work, drawn from a fixed-seed stream.
inline float math_random_input(MathFn f, SplitMix64& rng) {
  const uint64_t r = rng.next();
  const bool by_bits = (r & 1u) != 0;  // half uniform in value, half uniform in bit pattern
  const float sign = (r & 2u) ? -1.0f : 1.0f;
  auto bits_below = [&](float limit) {  // a float uniform by bit pattern in [0, limit)
    return f32_of_bits(static_cast<uint32_t>(rng.next() % bits_of_f32(limit)));
  };
  switch (f) {
    case MathFn::exp: return by_bits ? sign * bits_below(104.0f) : rng.uniform(-104.0f, 89.0f);
    case MathFn::log: return by_bits ? bits_below(std::numeric_limits<float>::infinity()) : rng.uniform(0.25f, 4.0f);
    case MathFn::tanh: return sign * (by_bits ? bits_below(10.0f) : rng.uniform(0.0f, 10.0f));
    case MathFn::erf: return sign * (by_bits ? bits_below(4.0f) : rng.uniform(0.0f, 4.0f));
    case MathFn::sin:
    case MathFn::cos:
      return sign * (by_bits ? bits_below(std::numeric_limits<float>::infinity()) : rng.uniform(0.0f, 1000.0f));
    case MathFn::cos_2pi: return by_bits ? bits_below(1.0f) : rng.uniform(0.0f, 1.0f);
  }
  return 0.0f;
}

struct UlpSweep {
  double max_ulp = 0.0;
  float worst_input = 0.0f;
  uint64_t count = 0;
  uint64_t correctly_rounded = 0;  // results within 1/2 ULP
};

// The sweep: `strided` inputs spread evenly over all 2^32 bit patterns (low bits varied), `random`
// inputs from math_random_input, and the edge inputs. cos_2pi takes its domain (0, 1] only.
inline UlpSweep math_ulp_sweep(MathFn f, uint64_t strided, uint64_t random, uint64_t seed) {
  MpfrMath ref;
  UlpSweep s;
  auto one = [&](float x) {
    if (f == MathFn::cos_2pi && !(x > 0.0f && x <= 1.0f)) return;
    const double e = ref.ulp_error(f, x, math_eval(f, x));
    ++s.count;
    if (e <= 0.5) ++s.correctly_rounded;
    if (e > s.max_ulp || std::isnan(e)) {
      s.max_ulp = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      s.worst_input = x;
    }
  };
  const uint64_t stride = (uint64_t{1} << 32) / strided;
  for (uint64_t i = 0; i < strided; ++i) {
    const uint64_t jitter = (i * 0x9e3779b1ull) % stride;
    const uint32_t b = static_cast<uint32_t>(i * stride + jitter);
    one(f == MathFn::cos_2pi ? f32_of_bits(b % 0x3f800000u + 1u) : f32_of_bits(b));
  }
  SplitMix64 rng{seed};
  for (uint64_t i = 0; i < random; ++i) one(math_random_input(f, rng));
  for (float x : math_edge_inputs()) one(x);
  return s;
}

inline void print_sweep(MathFn f, const UlpSweep& s) {
  std::printf("%-8s max %.4f ULP (bound %.0f) at x = %a; %llu inputs, %.4f%% correctly rounded\n", math_name(f),
              s.max_ulp, math_ulp_bound(f), static_cast<double>(s.worst_input),
              static_cast<unsigned long long>(s.count),
              100.0 * static_cast<double>(s.correctly_rounded) / static_cast<double>(s.count));
  std::fflush(stdout);
}

}  // namespace sb::test
