// The bf16 pair order (numerics.bf16_dot = pairs; ops/bf16_pairs.hpp): an fp64/integer model of
// vdpbf16ps (the exact sum of the accumulator and the product by TwoSum, rounded to 24 bits with an
// unbounded exponent, then flushed below 2^-126) against ops::bf16_pair_step and bf16_pair_dot on
// adversarial and random pairs; every path this CPU has (SAMEBITS_BF16_ISA), every thread count
// 1–4, both transpositions, accumulation and bias against ops::bf16_pair_dot, bitwise; every path's
// packing of adversarial fp32 (ties, subnormals, overflow, NaN) and of an odd k's pads; a syrk's
// mirrored triangle; the chain order differs (the positive control); bad names are errors naming
// the variable or key.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/cpu/bf16_pairs_isa.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/bf16_pairs.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

// ---- the model: integers and fp64 only, no fp32 fma -----------------------------------------

// A bf16 value as vdpbf16ps reads it: a subnormal (exponent 0) is the zero of its sign.
double model_bf16(uint16_t b) {
  if ((b & 0x7f80u) == 0) return (b & 0x8000u) ? -0.0 : 0.0;
  return static_cast<double>(det::float_of_bits(uint32_t{b} << 16));
}

// RN to 24 significand bits, exponent unbounded, of s + t (TwoSum's pair: |t| ≤ ulp53(s)/2, so
// only a midpoint s needs t's sign).
double round24(double s, double t) {
  int e = 0;
  const double f = std::frexp(std::fabs(s), &e);  // |s| = f·2^e, f in [0.5, 1)
  const double scaled = std::ldexp(f, 24);        // 2^23 ≤ scaled < 2^24
  double q = std::floor(scaled);
  const double rest = scaled - q;  // exact
  const double toward = s < 0 ? -t : t;
  if (rest > 0.5 || (rest == 0.5 && (toward > 0 || (toward == 0 && std::fmod(q, 2.0) == 1.0)))) q += 1.0;
  return std::copysign(std::ldexp(q, e - 24), s);
}

// acc + a·b as the instruction computes it (finite acc that is normal or zero, finite a, b).
float model_step(float acc, double a, double b) {
  const double p = a * b;  // exact: 16 significand bits
  const double s = static_cast<double>(acc) + p, bb = s - static_cast<double>(acc);
  const double t = (static_cast<double>(acc) - (s - bb)) + (p - bb);  // TwoSum: s + t = acc + p exactly
  if (s == 0.0 && t == 0.0) return std::signbit(acc) && std::signbit(p) ? -0.0f : 0.0f;
  const double r = round24(s, t);
  if (std::fabs(r) < 0x1p-126) return std::signbit(r) ? -0.0f : 0.0f;
  if (std::fabs(r) >= 0x1p128) return std::signbit(r) ? -INFINITY : INFINITY;
  return static_cast<float>(r);  // exact: 24 bits in the normal range
}

// The model's dot of bf16 bit arrays in the pair order from acc (flushed), odd k padded.
float model_dot(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, float acc) {
  if ((det::bits_of(acc) & 0x7f800000u) == 0) acc = std::signbit(acc) ? -0.0f : 0.0f;
  const size_t k = a.size();
  for (size_t p = 0; p < k; p += 2) {
    if (p + 1 < k) acc = model_step(acc, model_bf16(a[p + 1]), model_bf16(b[p + 1]));
    else acc = model_step(acc, -0.0, 0.0);
    acc = model_step(acc, model_bf16(a[p]), model_bf16(b[p]));
  }
  return acc;
}

// bf16 bit patterns: near 1 (ties, cancellation), near the flush (products around 2^-126),
// subnormals and zeros, and anywhere finite.
struct Draw {
  std::mt19937_64 rng;
  uint16_t bf16() {
    const uint64_t r = rng();
    const uint32_t kind = r % 8, mant = (r >> 8) & 0x7f, sign = (r >> 16) & 1;
    uint32_t e = 1 + (r >> 24) % 254;
    if (kind < 3) e = 119 + (r >> 24) % 16;
    if (kind == 3) e = 60 + (r >> 24) % 8;
    if (kind == 4) e = 0;
    return static_cast<uint16_t>(sign << 15 | e << 7 | mant);
  }
  float acc() {  // normal or zero fp32, often near 2^-126
    const uint32_t u = static_cast<uint32_t>(rng());
    return ops::bf16_pair_flush(rng() % 2 ? det::float_of_bits(u & 0xbfffffffu) : det::float_of_bits(u & 0x80ffffffu));
  }
};

std::vector<float> pair_gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float> c, Trans ta,
                             Trans tb, int m, int n, int k, bool accumulate, const float* bias) {
  auto be = make_cpu_backend({GemmMode::canonical, ReduceMode::canonical, Precision::bf16, Bf16Dot::pairs});
  be->gemm({ta, tb, m, n, k, a.data(), ta == Trans::no ? k : m, b.data(), tb == Trans::no ? n : k, c.data(), n,
            accumulate, Precision::bf16, bias});
  return c;
}

// C by ops::bf16_pair_dot element by element (then the bias in one addition).
std::vector<float> pair_reference(const std::vector<float>& a, const std::vector<float>& b, std::vector<float> c,
                                  Trans ta, Trans tb, int m, int n, int k, bool accumulate, const float* bias) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      const float* ai = ta == Trans::no ? a.data() + static_cast<size_t>(i) * k : a.data() + i;
      const float* bj = tb == Trans::no ? b.data() + j : b.data() + static_cast<size_t>(j) * k;
      float& cij = c[static_cast<size_t>(i) * n + j];
      cij = ops::bf16_pair_dot(ai, ta == Trans::no ? 1 : m, bj, tb == Trans::no ? n : 1, k, accumulate ? cij : 0.0f);
      if (bias != nullptr) cij = ops::linear_out(cij, bias[j]);
    }
  }
  return c;
}

struct ForcedIsa {
  explicit ForcedIsa(const std::string& name) { ::setenv("SAMEBITS_BF16_ISA", name.c_str(), 1); }
  ~ForcedIsa() { ::unsetenv("SAMEBITS_BF16_ISA"); }
};

}  // namespace

TEST_CASE("bf16 pairs: the formula equals the fp64 model of vdpbf16ps on adversarial single steps") {
  // The flush boundary: 2^-126 − 2^-e for e = 149 … 153 (a product of 2^-76 and 2^(76−e)).
  for (const float s : {1.0f, -1.0f}) {
    for (int e = 149; e <= 153; ++e) {
      const float b = -s * std::ldexp(1.0f, 76 - e);
      const float want = model_step(s * 0x1p-126f, 0x1p-76, b);
      CHECK(det::bits_of(ops::bf16_pair_step(s * 0x1p-126f, 0x1p-76f, b)) == det::bits_of(want));
    }
  }
  // 2^-126 − 2^-150 flushes, 2^-126 − 2^-151 (a tie, to even) stays 2^-126: fma_f32 alone gives
  // 2^-126 for both.
  CHECK(det::bits_of(ops::bf16_pair_step(0x1p-126f, 0x1p-76f, -0x1p-74f)) == 0u);
  CHECK(det::bits_of(ops::bf16_pair_step(0x1p-126f, 0x1p-76f, -0x1p-75f)) == 0x00800000u);
  Draw draw{std::mt19937_64(20261207)};
  for (int trial = 0; trial < 2000000; ++trial) {
    const float acc = draw.acc();
    const uint16_t a = ops::bf16_pair_operand(det::f32_from_bf16_bits(draw.bf16()));
    const uint16_t b = ops::bf16_pair_operand(det::f32_from_bf16_bits(draw.bf16()));
    const float got = ops::bf16_pair_step(acc, det::f32_from_bf16_bits(a), det::f32_from_bf16_bits(b));
    const float want = model_step(acc, model_bf16(a), model_bf16(b));
    if (det::bits_of(got) != det::bits_of(want)) {
      FAIL("acc ", det::bits_of(acc), " a ", a, " b ", b, ": formula ", det::bits_of(got), ", model ",
           det::bits_of(want));
    }
  }
}

TEST_CASE("bf16 pairs: bf16_pair_dot is the model's chain, odd k's pad included, −0 kept") {
  Draw draw{std::mt19937_64(7)};
  for (int k : {1, 2, 3, 7, 64, 65, 255}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<uint16_t> ab(k), bb(k);
      std::vector<float> af(k), bf(k);
      for (int p = 0; p < k; ++p) {
        af[p] = det::f32_from_bf16_bits(draw.bf16());
        bf[p] = det::f32_from_bf16_bits(draw.bf16());
        ab[p] = ops::bf16_pair_operand(af[p]);
        bb[p] = ops::bf16_pair_operand(bf[p]);
      }
      const float acc = trial % 2 ? draw.acc() : 0.0f;
      REQUIRE(det::bits_of(ops::bf16_pair_dot(af.data(), 1, bf.data(), 1, k, acc)) ==
              det::bits_of(model_dot(ab, bb, acc)));
    }
  }
  // An odd k's pad (−0·+0) leaves an accumulated −0 as it is; a +0 pad would give +0.
  const float a[3] = {-1.0f, 0.0f, 0.0f}, b[3] = {0.0f, 1.0f, 1.0f};
  CHECK(det::bits_of(ops::bf16_pair_dot(a, 1, b, 1, 1, -0.0f)) == 0x80000000u);
  CHECK(det::bits_of(ops::bf16_pair_step(-0.0f, 0.0f, 0.0f)) == 0u);
  CHECK(det::bits_of(ops::bf16_pair_dot(a, 1, b, 1, 1, 0.0f)) == 0u);
  // A subnormal C read as zero (DAZ) when a product continues it.
  const float sub = 0x1p-130f;
  CHECK(det::bits_of(ops::bf16_pair_dot(a + 1, 1, b + 1, 1, 2, sub)) == 0u);
}

TEST_CASE("bf16 pairs: the pair order is not the chain (positive control)") {
  // Products 1, 0, 2^-24, 1.5·2^-24: the chain rounds 1 + 2^-24 (a tie) to 1, then 1 + 1.5·2^-24 to
  // 1 + 2^-23; the pairs add 1.5·2^-24 first (1 + 2^-23), then 2^-24: a tie, to 1 + 2^-22.
  const float a[4] = {1.0f, 0.0f, 0x1p-12f, 0x1.8p-12f}, b[4] = {1.0f, 0.0f, 0x1p-12f, 0x1p-12f};
  const float chain = ops::canonical_dot_rounded(a, 1, b, 1, 4, 0.0f, Precision::bf16);
  const float pairs = ops::bf16_pair_dot(a, 1, b, 1, 4, 0.0f);
  CHECK(chain == 1.0f + 0x1p-23f);
  CHECK(pairs == 1.0f + 0x1p-22f);
  CHECK(det::bits_of(chain) != det::bits_of(pairs));
  // And through the backends, on a GEMM of random values.
  const int m = 9, n = 33, k = 301;
  const auto A = test::uniform(size_t(m) * k, 1), B = test::uniform(size_t(k) * n, 2);
  std::vector<float> c_chain(size_t(m) * n),
      c_pairs = pair_gemm(A, B, c_chain, Trans::no, Trans::no, m, n, k, false, nullptr);
  make_cpu_backend(Numerics::deterministic(Precision::bf16))
      ->gemm({Trans::no, Trans::no, m, n, k, A.data(), k, B.data(), n, c_chain.data(), n, false, Precision::bf16});
  CHECK(std::memcmp(c_chain.data(), c_pairs.data(), c_chain.size() * 4) != 0);
}

TEST_CASE("bf16 pairs: every path, thread count and transposition gives ops::bf16_pair_dot's bits") {
  std::vector<std::string> paths;
  for (const std::string& name : bf16_pairs_isa_names())
    if (bf16_pairs_isa_available(name)) paths.push_back(name);
  MESSAGE("bf16 pair paths on this CPU: ", paths.size(), " (default ", bf16_pairs_isa(), ")");
  const Bf16InstructionCheck& check = bf16_instruction_check();
  MESSAGE("instruction check: ", check.detail);
  CHECK((!check.ran || check.agree));
  const int saved = omp_get_max_threads();
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{8, 32, 2}, Shape{17, 45, 301}, Shape{40, 70, 513}}) {
    Draw draw{std::mt19937_64(static_cast<uint64_t>(s.m * 131 + s.k))};
    std::vector<float> A(size_t(s.m) * s.k), B(size_t(s.k) * s.n), C0(size_t(s.m) * s.n), bias(size_t(s.n));
    for (float& x : A) x = det::f32_from_bf16_bits(draw.bf16()) * (draw.rng() % 4 == 0 ? 1.0f : 1.001f);
    for (float& x : B) x = det::f32_from_bf16_bits(draw.bf16());
    for (float& x : C0) x = draw.rng() % 8 == 0 ? 0x1p-130f : draw.acc();  // subnormal C read as zero
    for (float& x : bias) x = draw.acc();
    for (const Trans ta : {Trans::no, Trans::yes}) {
      for (const Trans tb : {Trans::no, Trans::yes}) {
        for (const bool acc : {false, true}) {
          const float* bp = acc ? nullptr : bias.data();
          const auto want = pair_reference(A, B, C0, ta, tb, s.m, s.n, s.k, acc, bp);
          for (const std::string& path : paths) {
            const ForcedIsa forced(path);
            for (int threads = 1; threads <= 4; ++threads) {
              omp_set_num_threads(threads);
              const auto got = pair_gemm(A, B, C0, ta, tb, s.m, s.n, s.k, acc, bp);
              CAPTURE(path);
              CAPTURE(threads);
              REQUIRE(test::same_bits(got.data(), want.data(), got.size(), "pair GEMM"));
            }
          }
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

namespace {

// op(X) (rows, cols), stored as it is or transposed.
std::vector<float> stored(const std::vector<float>& x, int rows, int cols, Trans t) {
  if (t == Trans::no) return x;
  std::vector<float> s(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) s[static_cast<size_t>(c) * rows + r] = x[static_cast<size_t>(r) * cols + c];
  return s;
}

}  // namespace

TEST_CASE("bf16 pairs: every path packs every fp32 as bf16_pair_operand, in every layout") {
  // Ties either way, fp32 subnormals (one rounding up to bf16's smallest normal), the largest
  // finite values (rounding to Inf), Inf, NaNs (one whose rounding would carry), signed zeros,
  // then random bit patterns.
  std::vector<uint32_t> bits = {0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff, 0xbf818000, 0x00000001,
                                0x00008000, 0x007f7fff, 0x007f8000, 0x007fffff, 0x807fffff, 0x00800000,
                                0x7f7f7fff, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001,
                                0x7f808000, 0x7fc00000, 0xffffffff, 0x00000000, 0x80000000, 0x3f800000};
  std::mt19937 rng(57);
  while (bits.size() < 600) bits.push_back(static_cast<uint32_t>(rng()));  // past one packing task (512 lanes)
  const int v = static_cast<int>(bits.size()), k = 37, few = 11;           // k: two blocks of 16 and an odd tail
  // One value per line of op(A) (or op(B)) at p = line % k, zeros elsewhere; the other operand all
  // ones: every C element is that value's operand.
  std::vector<float> sparse(static_cast<size_t>(v) * k, 0.0f), ones(static_cast<size_t>(few) * k, 1.0f);
  for (int i = 0; i < v; ++i) sparse[static_cast<size_t>(i) * k + i % k] = det::float_of_bits(bits[i]);
  const std::vector<float> sparse_t = stored(sparse, v, k, Trans::yes);  // op(B) (k, v): column j is line j
  auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    for (size_t e = 0; e < x.size(); ++e)
      if (det::bits_of(x[e]) != det::bits_of(y[e]) && !(x[e] != x[e] && y[e] != y[e])) return false;
    return true;
  };
  for (const std::string& path : bf16_pairs_isa_names()) {
    if (!bf16_pairs_isa_available(path)) continue;
    const ForcedIsa forced(path);
    for (const Trans ta : {Trans::no, Trans::yes}) {
      for (const Trans tb : {Trans::no, Trans::yes}) {
        CAPTURE(path);
        CAPTURE(static_cast<int>(ta));
        CAPTURE(static_cast<int>(tb));
        const auto a = stored(sparse, v, k, ta), b = stored(ones, k, few, tb);
        const std::vector<float> c_a(static_cast<size_t>(v) * few);
        CHECK(same(pair_gemm(a, b, c_a, ta, tb, v, few, k, false, nullptr),
                   pair_reference(a, b, c_a, ta, tb, v, few, k, false, nullptr)));
        const auto a1 = stored(ones, few, k, ta), b1 = stored(sparse_t, k, v, tb);
        const std::vector<float> c_b(static_cast<size_t>(few) * v);
        CHECK(same(pair_gemm(a1, b1, c_b, ta, tb, few, v, k, false, nullptr),
                   pair_reference(a1, b1, c_b, ta, tb, few, v, k, false, nullptr)));
        // An odd k's pads (−0 in A, +0 in B) keep an accumulated −0 when every product is −0;
        // any other pad gives +0.
        for (const int kk : {1, 17, 37}) {
          const std::vector<float> a2(static_cast<size_t>(few) * kk, 1.0f), b2(static_cast<size_t>(kk) * v, -0.0f),
              c2(static_cast<size_t>(few) * v, -0.0f);
          CHECK(same(pair_gemm(a2, b2, c2, ta, tb, few, v, kk, true, nullptr), c2));
        }
      }
    }
  }
}

TEST_CASE("bf16 pairs: a syrk's mirrored upper triangle is the full product's bits") {
  const int saved = omp_get_max_threads();
  struct Shape {
    int n, k;
  };
  for (const Shape s : {Shape{1, 3}, Shape{77, 45}, Shape{130, 300}}) {
    Draw draw{std::mt19937_64(static_cast<uint64_t>(s.n * 7 + s.k))};
    std::vector<float> A(size_t(s.n) * s.k);
    for (float& x : A) x = det::f32_from_bf16_bits(draw.bf16()) * 1.001f;
    for (const Trans ta : {Trans::no, Trans::yes}) {
      const Trans tb = ta == Trans::no ? Trans::yes : Trans::no;
      const std::vector<float> zero(size_t(s.n) * s.n);
      const auto want = pair_reference(A, A, zero, ta, tb, s.n, s.n, s.k, false, nullptr);
      for (const std::string& path : bf16_pairs_isa_names()) {
        if (!bf16_pairs_isa_available(path)) continue;
        const ForcedIsa forced(path);
        for (int threads = 1; threads <= 3; ++threads) {
          omp_set_num_threads(threads);
          std::vector<float> got(zero.size(), 1.0f);
          auto be = make_cpu_backend({GemmMode::canonical, ReduceMode::canonical, Precision::bf16, Bf16Dot::pairs});
          be->syrk(
              ops::syrk_problem(ta, s.n, s.k, A.data(), ta == Trans::no ? s.k : s.n, got.data(), s.n, Precision::bf16));
          CAPTURE(path);
          CAPTURE(threads);
          REQUIRE(test::same_bits(got.data(), want.data(), got.size(), "pair syrk"));
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("bf16 pairs: unknown paths and settings are errors that name what to change") {
  {
    const ForcedIsa forced("avx9000");
    CHECK_THROWS_WITH_AS(bf16_pairs_isa(), doctest::Contains("SAMEBITS_BF16_ISA='avx9000'"), Error);
  }
  for (const std::string& name : bf16_pairs_isa_names()) {
    if (bf16_pairs_isa_available(name)) continue;
    const ForcedIsa forced(name);
    CHECK_THROWS_WITH_AS(bf16_pairs_isa(), doctest::Contains(("SAMEBITS_BF16_ISA=" + name).c_str()), Error);
  }
  Config c;
  c.numerics.bf16_dot = Bf16Dot::pairs;
  CHECK_THROWS_WITH_AS(validate(c), doctest::Contains("numerics.bf16_dot=pairs"), Error);
  c.train.precision = Precision::bf16;
  CHECK_NOTHROW(validate(c));
  c.numerics.gemm = GemmMode::exact;
  CHECK_THROWS_WITH_AS(validate(c), doctest::Contains("numerics.gemm=exact"), Error);
}
