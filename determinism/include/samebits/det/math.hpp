// samebits' own fp32 elementary functions: exp, log, tanh, erf, sin, cos and cos_2pi, built only
// from + − × ÷ √ fma, conversions and bit operations (docs/CONTRACT.md rule 7). One SB_HD source for
// host and device, IEEE operations only, so every configuration returns the same bits. Never libm.
// Algorithms, coefficients (scripts/math_coefficients.py) and measured ULP errors: docs/MATH.md.
#pragma once
#include <stdint.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/hd.hpp"

namespace sb::det {

namespace math_detail {

constexpr uint32_t kSignF32 = 0x80000000u;

SB_HD float abs_f32(float x) { return float_of_bits(bits_of(x) & ~kSignF32); }

// |y| with the sign bit of `sign_of` (y ≥ 0 or NaN).
SB_HD float with_sign_of(float y, float sign_of) { return float_of_bits(bits_of(y) | (bits_of(sign_of) & kSignF32)); }

SB_HD float inf_f32() { return float_of_bits(0x7f800000u); }
// Every NaN result is this one quiet NaN: hardware differs in how it propagates NaN payloads
// (x86 keeps the operand's, NVIDIA GPUs return 0x7fffffff), so no NaN is computed arithmetically.
SB_HD float nan_f32() { return float_of_bits(0x7fc00000u); }

// 2^k for −126 ≤ k ≤ 127, built from its bits.
SB_HD float pow2_f32(int k) { return float_of_bits(static_cast<uint32_t>(k + 127) << 23); }
// 2^k for −1022 ≤ k ≤ 1023.
SB_HD double pow2_f64(int k) { return double_of_bits(static_cast<uint64_t>(k + 1023) << 52); }

// e^x in fp32 arithmetic for −104 < x ≤ 88.7228317 (callers handle the rest). Cody–Waite
// reduction x = k·ln2 + r_hi + r_lo with |r_hi| ≤ ln2/2 exact (fma with ln2_hi = fl(ln2)), then
// e^r = (1 + r_hi) + (r_hi²·P(r_hi) + r_lo·e^r_hi), the sum 1 + r_hi kept exactly (Fast2Sum) so
// only the last addition rounds at full weight; 2^k applied in two exact-or-final steps.
SB_HD float exp_finite_f32(float x) {
  constexpr float kShift = 0x1.8p23f;  // adding it rounds to an integer
  const float kf = fma_f32(x, 0x1.715476p+0f, kShift) - kShift;
  const float r_hi = fma_f32(kf, -0x1.62e430p-1f, x);  // exact
  const float r_lo = kf * 0x1.05c610p-29f;             // −k·(ln2 − ln2_hi)
  // P(r) = (e^r − 1 − r)/r², minimax on |r| ≤ 0.3467, relative error 2^-28.5
  float p = 0x1.a072d2p-13f;
  p = fma_f32(p, r_hi, 0x1.6d4302p-10f);
  p = fma_f32(p, r_hi, 0x1.11114cp-7f);
  p = fma_f32(p, r_hi, 0x1.5554eap-5f);
  p = fma_f32(p, r_hi, 0x1.555556p-3f);
  p = fma_f32(p, r_hi, 0x1.000000p-1f);
  const float s = 1.0f + r_hi;
  const float s_err = r_hi - (s - 1.0f);           // 1 + r_hi = s + s_err exactly
  const float t = fma_f32(r_hi * r_hi, p, s_err);  // e^r_hi = s + t
  const float tail = fma_f32(r_lo, s + t, t);      // e^(r_hi + r_lo) = s + t + r_lo·e^r_hi
  const float y = s + tail;                        // e^(r_hi + r_lo) in [0.7, 1.42]
  const int k = static_cast<int>(kf);              // −150 … 128
  const int k1 = k >> 1;
  return (y * pow2_f32(k1)) * pow2_f32(k - k1);  // first product exact, second the only rounding
}

// e^y in fp64 arithmetic for −700 < y < 700 (internal: erf). Relative error below 2^-50.
SB_HD double exp_finite_f64(double y) {
  constexpr double kShift = 0x1.8p52;
  const double kd = fma_f64(y, 0x1.71547652b82fep+0, kShift) - kShift;
  double r = fma_f64(kd, -0x1.62e42fefa39efp-1, y);  // exact
  r = fma_f64(kd, -0x1.abc9e3b39803fp-56, r);
  // P(r) = (e^r − 1 − r)/r², minimax on |r| ≤ 0.3467, relative error 2^-34.2
  double p = 0x1.a06ce868262cdp-16;
  p = fma_f64(p, r, 0x1.a1515e8dd6e60p-13);
  p = fma_f64(p, r, 0x1.6c16fd5ffd86ep-10);
  p = fma_f64(p, r, 0x1.1110c6481c78ap-7);
  p = fma_f64(p, r, 0x1.555555315a2c0p-5);
  p = fma_f64(p, r, 0x1.555555674669bp-3);
  p = fma_f64(p, r, 0x1.00000000049abp-1);
  return (1.0 + fma_f64(r * r, p, r)) * pow2_f64(static_cast<int>(kd));
}

// sin r and cos r for |r| ≤ 0.786, fp64, relative error below 2^-40.
SB_HD double sin_kernel(double r) {
  const double u = r * r;
  // S(u) = (sin r − r)/r³, minimax, relative error 2^-42.4
  double p = -0x1.aa252d0bc4fcap-26;
  p = fma_f64(p, u, 0x1.71d9a2a42a5d2p-19);
  p = fma_f64(p, u, -0x1.a019fd90b453bp-13);
  p = fma_f64(p, u, 0x1.1111110fcf062p-7);
  p = fma_f64(p, u, -0x1.5555555555156p-3);
  return fma_f64(r * u, p, r);
}

SB_HD double cos_kernel(double r) {
  const double u = r * r;
  // C(u) = (cos r − 1)/r², minimax, relative error 2^-40.3
  double p = -0x1.24716b282da4ep-22;
  p = fma_f64(p, u, 0x1.a012888c4852bp-16);
  p = fma_f64(p, u, -0x1.6c16bace0403ap-10);
  p = fma_f64(p, u, 0x1.55555551390a7p-5);
  p = fma_f64(p, u, -0x1.fffffffffe5c5p-2);
  return fma_f64(u, p, 1.0);
}

// sin or cos (cos_wanted) of n·π/2 + r from the quadrant n and the reduced |r| ≤ 0.786.
SB_HD double sincos_of_quadrant(double r, unsigned n, bool cos_wanted) {
  const unsigned q = (n + (cos_wanted ? 1u : 0u)) & 3u;  // cos(x) = sin(x + π/2)
  const double v = (q & 1u) ? cos_kernel(r) : sin_kernel(r);
  return (q & 2u) ? -v : v;
}

struct Reduced {
  double r;    // a − n·π/2, |r| ≤ π/4 (+2^-30)
  unsigned n;  // the quadrant, mod 4
};

// a = n·π/2 + r for finite a ≥ π/4. Below 2^20: Cody–Waite with π/2 in three pieces (n·P1 and
// n·P2 exact). From 2^20 on: Payne–Hanek, exact integer product of a's 24-bit significand with the
// 128 bits of 2/π that matter, so every float is reduced with a relative error below 2^-50.
SB_HD Reduced reduce_pio2(float a) {
  if (a < 0x1p20f) {
    constexpr double kShift = 0x1.8p52;
    const double d = a;
    const double nd = fma_f64(d, 0x1.45f306dc9c883p-1, kShift) - kShift;
    double r = d - nd * 0x1.921fb54400000p+0;  // exact (Sterbenz)
    r = r - nd * 0x1.0b4611a000000p-34;
    r = r - nd * 0x1.898cc51701b84p-64;
    return {r, static_cast<unsigned>(nd)};
  }
  // Bits of 2/π: word j holds bits 32(j−1)+1 … 32j after the binary point (word 0: the zeros
  // before it). Local, so host and device index the same values.
  const uint32_t two_over_pi[9] = {0x00000000u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u,
                                   0xDB629599u, 0x3C439041u, 0xFE5163ABu, 0xDEBBC561u};
  const uint32_t ia = bits_of(a);
  const uint64_t m = (ia & 0x7fffffu) | 0x800000u;  // a = m·2^e
  const int e = static_cast<int>(ia >> 23) - 150;   // −3 … 104
  // The window: bits e−1 … e+126 of 2/π (bit i weighs 2^-i). Bits before it add multiples of 4
  // quarter turns, bits after it less than 2^-102 of one.
  const int first = e + 30;  // position of bit e−1 in the table (bit 0 = word 0's top)
  const int w = first >> 5, sh = first & 31;
  uint32_t win[4];  // 128-bit window, most significant word first
  for (int j = 0; j < 4; ++j) {
    const uint64_t pair = (static_cast<uint64_t>(two_over_pi[w + j]) << 32) | two_over_pi[w + j + 1];
    win[j] = static_cast<uint32_t>(pair >> (32 - sh));
  }
  // y = m·window mod 2^128 = a·(2/π) mod 4, scaled by 2^126: quadrant in the top 2 bits.
  uint32_t y[4];
  uint64_t carry = 0;
  for (int j = 3; j >= 0; --j) {
    const uint64_t p = m * win[j] + carry;
    y[j] = static_cast<uint32_t>(p);
    carry = p >> 32;
  }
  // The 126 fraction bits, read as a signed fraction in [−1/2, 1/2) (rounding a·2/π to nearest).
  const uint64_t hi = (static_cast<uint64_t>(y[0]) << 34) | (static_cast<uint64_t>(y[1]) << 2) | (y[2] >> 30);
  const uint64_t lo = (static_cast<uint64_t>(y[2]) << 34) | (static_cast<uint64_t>(y[3]) << 2);
  const double f = static_cast<double>(static_cast<int64_t>(hi)) + static_cast<double>(lo) * 0x1p-64;
  const unsigned n = (y[0] >> 30) + static_cast<unsigned>(hi >> 63);
  return {f * 0x1.921fb54442d18p-64, n};  // f·2^-64·π/2
}

SB_HD float sin_or_cos(float x, bool cos_wanted) {
  const float a = abs_f32(x);
  if (!(a < inf_f32())) return nan_f32();  // ±Inf, NaN
  double v;
  if (a < 0.785398163397448f) {
    v = cos_wanted ? cos_kernel(a) : sin_kernel(a);
  } else {
    const Reduced red = reduce_pio2(a);
    v = sincos_of_quadrant(red.r, red.n, cos_wanted);
  }
  const float y = static_cast<float>(v);
  return cos_wanted ? y : float_of_bits(bits_of(y) ^ (bits_of(x) & kSignF32));
}

}  // namespace math_detail

// e^x. Max error below 1 ULP; exact ±Inf/0 limits. Every NaN result is 0x7fc00000.
SB_HD float exp(float x) {
  if (!(x > -104.0f)) return x != x ? math_detail::nan_f32() : 0.0f;  // e^x < 2^-150 → +0
  if (x > 0x1.62e42ep6f) return math_detail::inf_f32();               // e^x ≥ 2^128·(1 − 2^-25)
  return math_detail::exp_finite_f32(x);
}

namespace math_detail {
// log of a positive finite float x (normal or subnormal): the body of det::log below, without its
// special cases and branches, so that loops over many values can be vectorised (philox.hpp).
SB_HD float log_positive_finite(float x) {
  const uint64_t id = bits_of(static_cast<double>(x));                // subnormal floats are normal doubles
  const bool high = (id & 0xfffffffffffffull) >= 0x6a09e667f3bcdull;  // mantissa ≥ √2
  const int k = static_cast<int>(id >> 52) - 1023 + (high ? 1 : 0);
  const double m = double_of_bits((id & 0xfffffffffffffull) | (high ? 0x3fe0000000000000ull : 0x3ff0000000000000ull));
  const double f = m - 1.0;  // exact
  const double s = f / (2.0 + f);
  const double z = s * s;
  // L(z) = atanh(s)/s, minimax on z ≤ 0.02944, relative error 2^-45.1
  double p = 0x1.9198cede07df8p-4;
  p = fma_f64(p, z, 0x1.c62080701ed5fp-4);
  p = fma_f64(p, z, 0x1.24943984a9b73p-3);
  p = fma_f64(p, z, 0x1.9999962850880p-3);
  p = fma_f64(p, z, 0x1.5555555673016p-2);
  p = fma_f64(p, z, 0x1.fffffffffff10p-1);
  const double log_m = 2.0 * s * p;
  return static_cast<float>(fma_f64(static_cast<double>(k), 0x1.62e42fefa39efp-1, log_m));
}
}  // namespace math_detail

// Natural logarithm. fp64 inside: x = 2^k·m, m in [√2/2, √2), log m = 2·atanh(s) with
// s = (m−1)/(m+1), then k·ln2 + log m rounded once. log(±0) = −Inf, log(x<0) = NaN.
SB_HD float log(float x) {
  const uint32_t ix = bits_of(x);
  if (ix - 1u >= 0x7f7fffffu) {  // not a positive finite number
    if ((ix & ~math_detail::kSignF32) == 0) return -math_detail::inf_f32();
    return ix == 0x7f800000u ? x : math_detail::nan_f32();  // +Inf; x < 0 and NaN
  }
  return math_detail::log_positive_finite(x);
}

// Hyperbolic tangent, odd. |x| < 0.875: x + x³·P(x²); beyond: 1 − 2/(e^{2|x|} + 1) with samebits
// exp (the subtraction loses no accuracy there, tanh > 0.7). Max error below 2 ULP.
SB_HD float tanh(float x) {
  const float a = math_detail::abs_f32(x);
  float t;
  if (a < 0.875f) {
    const float u = a * a;
    // P(u) = (tanh x − x)/x³, minimax on u ≤ 0.765625, relative error 2^-30.1
    float p = 0x1.94cb44p-13f;
    p = fma_f32(p, u, -0x1.17ca36p-10f);
    p = fma_f32(p, u, 0x1.b98c36p-9f);
    p = fma_f32(p, u, -0x1.1ff990p-7f);
    p = fma_f32(p, u, 0x1.661476p-6f);
    p = fma_f32(p, u, -0x1.ba18e2p-5f);
    p = fma_f32(p, u, 0x1.11110ap-3f);
    p = fma_f32(p, u, -0x1.555556p-2f);
    t = fma_f32(a * u, p, a);
  } else if (a == a) {
    t = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);  // ±Inf gives 1
  } else {
    return math_detail::nan_f32();
  }
  return math_detail::with_sign_of(t, x);
}

// Error function, odd, fp64 inside. |x| < 1: x·E(x²); 1 ≤ |x| < 3.92: 1 − e^{−x²}·G(|x| − 2.5)
// with G ≈ erfc(x)·e^{x²} (x² exact in fp64); beyond, erf rounds to ±1. Max error below 2 ULP.
SB_HD float erf(float x) {
  const float a = math_detail::abs_f32(x);
  if (!(a < 3.92f)) return a == a ? math_detail::with_sign_of(1.0f, x) : math_detail::nan_f32();
  const double d = a;
  double v;
  if (a < 1.0f) {
    const double u = d * d;
    // E(u) = erf(x)/x, minimax on u ≤ 1, relative error 2^-40.1
    double p = 0x1.1b8c5933a68c9p-20;
    p = fma_f64(p, u, -0x1.d25cfdb486b07p-17);
    p = fma_f64(p, u, 0x1.f56be72a16628p-14);
    p = fma_f64(p, u, -0x1.bfdf58f7ff21dp-11);
    p = fma_f64(p, u, 0x1.56586cdb6f2d5p-8);
    p = fma_f64(p, u, -0x1.b82cb8f1fa8adp-6);
    p = fma_f64(p, u, 0x1.ce2f20974f290p-4);
    p = fma_f64(p, u, -0x1.812746adb20f5p-2);
    p = fma_f64(p, u, 0x1.20dd750428b20p+0);
    v = d * p;
  } else {
    const double t = d - 2.5;  // exact
    // G(t) = erfc(t + 2.5)·e^{(t+2.5)²}, minimax on −1.5 ≤ t ≤ 1.42, relative error 2^-27.9
    double g = 0x1.db3177e4eb594p-24;
    g = fma_f64(g, t, -0x1.bfc8c4465414dp-22);
    g = fma_f64(g, t, 0x1.f4df07f73e264p-21);
    g = fma_f64(g, t, -0x1.fdc7970608889p-19);
    g = fma_f64(g, t, 0x1.0fe3c96d0b76cp-16);
    g = fma_f64(g, t, -0x1.f27c5fc28b2b8p-15);
    g = fma_f64(g, t, 0x1.ba2464bca79e7p-13);
    g = fma_f64(g, t, -0x1.806d5756cc72dp-11);
    g = fma_f64(g, t, 0x1.435e40b2ae478p-9);
    g = fma_f64(g, t, -0x1.0632d5a79a4bcp-7);
    g = fma_f64(g, t, 0x1.989581cb56954p-6);
    g = fma_f64(g, t, -0x1.3086d5f56160cp-4);
    g = fma_f64(g, t, 0x1.afbb3f403b39dp-3);
    v = 1.0 - math_detail::exp_finite_f64(-(d * d)) * g;
  }
  return math_detail::with_sign_of(static_cast<float>(v), x);
}

// Sine and cosine over the whole float range (exact argument reduction), fp64 kernels, rounded
// once. Max error below 1 ULP; sin(±0) = ±0; ±Inf and NaN give NaN.
SB_HD float sin(float x) { return math_detail::sin_or_cos(x, false); }
SB_HD float cos(float x) { return math_detail::sin_or_cos(x, true); }

namespace math_detail {
// cos(2π·a) for 0 ≤ a < 2^24: the body of det::cos_2pi below without its special cases.
SB_HD float cos_2pi_below_2p24(float a) {
  constexpr double kShift = 0x1.8p52;
  const double v = 4.0 * static_cast<double>(a);  // exact
  const double nd = (v + kShift) - kShift;        // nearest integer
  const double r = (v - nd) * 0x1.921fb54442d18p+0;
  const double c = sincos_of_quadrant(r, static_cast<unsigned>(nd), true);
  return static_cast<float>(c + 0.0);  // −0 + 0 = +0
}
}  // namespace math_detail

// cos(2πu), for Box–Muller (u in (0, 1]; any finite u works). 4u = n + f exactly with |f| ≤ 1/2,
// then the cos/sin kernels at f·π/2. Exact zeros (u = 1/4, 3/4, …) are +0.
SB_HD float cos_2pi(float u) {
  const float a = math_detail::abs_f32(u);
  if (!(a < 0x1p24f)) return a < math_detail::inf_f32() ? 1.0f : math_detail::nan_f32();
  return math_detail::cos_2pi_below_2p24(a);
}

}  // namespace sb::det
