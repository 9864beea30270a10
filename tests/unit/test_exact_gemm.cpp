// The exact GEMM (numerics.gemm = exact; ops/exact_gemm.hpp, core/cpu/exact_*.cpp): every kernel
// this CPU has (SAMEBITS_ISA), every thread count (1–4: a few tiles with a long k are cut into
// parts of k across the threads) and both transpositions give the same bits,
// bitwise; syrk and the linear layer are the same products; rounding, zeros, subnormals, Inf and
// NaN as defined; a path the CPU lacks and k past the int32 bound are errors naming what to change.
// The definition itself is checked bit for bit by tests/oracle/exact_gemm_oracle.py.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cpu/exact_isa.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

// Sets SAMEBITS_ISA for the scope, restoring "unset" after.
struct ForcedIsa {
  explicit ForcedIsa(const char* name) { ::setenv("SAMEBITS_ISA", name, 1); }
  ~ForcedIsa() { ::unsetenv("SAMEBITS_ISA"); }
};

std::vector<std::string> isas_here() {
  std::vector<std::string> out;
  for (const std::string& name : exact_gemm_isa_names())
    if (exact_gemm_isa_available(name)) out.push_back(name);
  return out;
}

Numerics exact_numerics(Precision p) { return {GemmMode::exact, ReduceMode::canonical, p}; }

// C (m, n) of op(A)·op(B) [+ C0] under the exact GEMM, with op(A) and op(B) stored per ta, tb.
std::vector<float> exact_product(Trans ta, Trans tb, int m, int n, int k, const std::vector<float>& a,
                                 const std::vector<float>& b, const std::vector<float>& c0, bool accumulate,
                                 Precision prec) {
  auto be = make_cpu_backend(exact_numerics(prec));
  std::vector<float> c = c0;
  be->gemm({ta, tb, m, n, k, a.data(), ta == Trans::no ? k : m, b.data(), tb == Trans::no ? n : k, c.data(), n,
            accumulate, prec});
  return c;
}

// Values over ~60 binades within each row, with exact zeros, subnormals and both signs.
std::vector<float> wide_range(size_t count, uint64_t seed) {
  std::vector<float> x = test::uniform(count, seed);
  for (size_t i = 0; i < count; ++i) {
    const int binade = static_cast<int>((i * 2654435761u + seed) % 61) - 30;
    x[i] = std::ldexp(x[i], binade);
    if (i % 17 == 3) x[i] = 0.0f;
    if (i % 29 == 5) x[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i % 1000);
  }
  return x;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("exact gemm: every ISA path, thread count and transposition gives the same bits") {
  const std::vector<std::string> isas = isas_here();
  REQUIRE(!isas.empty());
  MESSAGE("exact GEMM paths on this CPU: ", isas.size(), " (default ", exact_gemm_isa(), ")");
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{7, 33, 5}, Shape{37, 70, 301}, Shape{16, 64, 1031}, Shape{3, 5, 4099}})
    for (Precision prec : {Precision::fp32, Precision::bf16, Precision::fp16})
      for (bool accumulate : {false, true}) {
        const auto a = wide_range(static_cast<size_t>(s.m) * s.k, 1);
        const auto b = wide_range(static_cast<size_t>(s.k) * s.n, 2);
        const auto c0 = test::uniform(static_cast<size_t>(s.m) * s.n, 3);
        std::vector<float> at(a.size()), bt(b.size());  // the transposed storage of the same op(A), op(B)
        for (int i = 0; i < s.m; ++i)
          for (int p = 0; p < s.k; ++p) at[static_cast<size_t>(p) * s.m + i] = a[static_cast<size_t>(i) * s.k + p];
        for (int p = 0; p < s.k; ++p)
          for (int j = 0; j < s.n; ++j) bt[static_cast<size_t>(j) * s.k + p] = b[static_cast<size_t>(p) * s.n + j];
        std::vector<float> reference;
        {
          ForcedIsa forced("scalar");
          omp_set_num_threads(1);
          reference = exact_product(Trans::no, Trans::no, s.m, s.n, s.k, a, b, c0, accumulate, prec);
        }
        for (const std::string& isa : isas)
          for (int threads : {1, 2, 3, 4}) {
            ForcedIsa forced(isa.c_str());
            omp_set_num_threads(threads);
            CAPTURE(isa);
            CAPTURE(threads);
            CHECK(same_bits(exact_product(Trans::no, Trans::no, s.m, s.n, s.k, a, b, c0, accumulate, prec), reference));
            CHECK(same_bits(exact_product(Trans::yes, Trans::yes, s.m, s.n, s.k, at, bt, c0, accumulate, prec),
                            reference));
          }
      }
  omp_set_num_threads(1);
}

TEST_CASE("exact gemm: oneDNN's blocks of 512 lines and k chunks of 2^18 give the scalar kernel's bits") {
  const std::vector<std::string> isas = isas_here();
  struct Shape {
    int m, n, k;
  };
  for (const Shape s : {Shape{520, 530, 9}, Shape{2, 3, (1 << 18) + 5}}) {
    const auto a = wide_range(static_cast<size_t>(s.m) * s.k, 7);
    const auto b = wide_range(static_cast<size_t>(s.k) * s.n, 8);
    const std::vector<float> c0(static_cast<size_t>(s.m) * s.n);
    std::vector<float> reference;
    {
      ForcedIsa forced("scalar");
      reference = exact_product(Trans::no, Trans::no, s.m, s.n, s.k, a, b, c0, false, Precision::fp32);
    }
    for (const std::string& isa : isas) {
      ForcedIsa forced(isa.c_str());
      CAPTURE(isa);
      CAPTURE(s.k);
      CHECK(same_bits(exact_product(Trans::no, Trans::no, s.m, s.n, s.k, a, b, c0, false, Precision::fp32), reference));
    }
  }
}

TEST_CASE("exact gemm: syrk and the linear layer are the same exact products") {
  const int n = 21, k = 67, oc = 40;
  const auto a = wide_range(static_cast<size_t>(n) * k, 4);
  auto be = make_cpu_backend(exact_numerics(Precision::fp32));
  std::vector<float> syrk(static_cast<size_t>(n) * n), gemm(syrk.size());
  be->syrk(sb::ops::syrk_problem(Trans::no, n, k, a.data(), k, syrk.data(), n, Precision::fp32));
  be->gemm({Trans::no, Trans::yes, n, n, k, a.data(), k, a.data(), k, gemm.data(), n, false, Precision::fp32});
  CHECK(same_bits(syrk, gemm));
  const auto w = test::uniform(static_cast<size_t>(oc) * k, 5);
  const auto bias = test::uniform(oc, 6);
  std::vector<float> fused(static_cast<size_t>(n) * oc), plain(fused.size());
  const sb::ops::GemmProblem linear{Trans::no, Trans::yes, n, oc, k, a.data(), k, w.data(), k, plain.data(), oc};
  be->gemm(linear);
  sb::ops::GemmProblem with_bias = linear.with_bias(bias.data());
  with_bias.c = fused.data();
  be->gemm(with_bias);
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < oc; ++o) plain[static_cast<size_t>(i) * oc + o] += bias[o];
  CHECK(same_bits(fused, plain));
}

TEST_CASE("exact gemm: one rounding to nearest even, subnormals, overflow, zeros, NaN and Inf") {
  const auto round_scaled = ops::exact::round_scaled_bits;
  CHECK(round_scaled((__int128{1} << 24) + 1, 0) == 16777216.0f);  // a tie: to even
  CHECK(round_scaled((__int128{1} << 24) + 3, 0) == 16777220.0f);  // a tie: to even (up)
  CHECK(round_scaled(3, -150) == std::ldexp(1.0f, -148));          // 1.5 of the smallest subnormal: to 2
  CHECK(round_scaled(1, -150) == 0.0f);                            // half the smallest subnormal: to even 0
  CHECK(round_scaled(-1, 200) == -std::numeric_limits<float>::infinity());
  CHECK(std::signbit(round_scaled(0, 0)) == false);
  // A row of op(A) with an Inf makes its row of C NaN; the other rows are finite.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a{1.0f, 2.0f, inf, 1.0f};  // (2, 2)
  const std::vector<float> b{1.0f, 0.5f, 0.25f, 2.0f};
  const auto c = exact_product(Trans::no, Trans::no, 2, 2, 2, a, b, std::vector<float>(4), false, Precision::fp32);
  CHECK(c[0] == 1.5f);
  CHECK(c[1] == 4.5f);
  CHECK(std::isnan(c[2]));
  CHECK(std::isnan(c[3]));
  // -x·x + x·x is an exact +0.
  const auto z =
      exact_product(Trans::no, Trans::no, 1, 1, 2, {-3.0f, 3.0f}, {3.0f, 3.0f}, {0.0f}, false, Precision::fp32);
  CHECK(z[0] == 0.0f);
  CHECK(std::signbit(z[0]) == false);
}

TEST_CASE("exact gemm: a forced path this CPU lacks and k past the int32 bound are errors") {
  for (const std::string& name : exact_gemm_isa_names()) {  // every path this machine lacks
    if (exact_gemm_isa_available(name)) continue;
    ForcedIsa forced(name.c_str());
    CHECK_THROWS_WITH_AS(exact_gemm_isa(), doctest::Contains(("SAMEBITS_ISA=" + name).c_str()), Error);
  }
  {
    ForcedIsa forced("sse9");
    CHECK_THROWS_WITH_AS(exact_gemm_isa(), doctest::Contains("not a path of the exact GEMM"), Error);
  }
  const int k = static_cast<int>(ops::exact::kMaxK) + 1;
  const std::vector<float> a(k, 1.0f);
  std::vector<float> c(1);
  auto be = make_cpu_backend(exact_numerics(Precision::fp32));
  CHECK_THROWS_WITH_AS(
      be->gemm({Trans::no, Trans::no, 1, 1, k, a.data(), k, a.data(), 1, c.data(), 1, false, Precision::fp32}),
      doctest::Contains("k must be at most 541064"), Error);
}

namespace {

// The definition computed directly: each line's scale from its rounded operands, the integer
// operands, their dot in __int128 (no digits), one rounding by the integer path
// (ops::exact::round_scaled_bits); NaN for a line holding a NaN or an Inf.
std::vector<float> definition_product(int m, int n, int k, const std::vector<float>& a, const std::vector<float>& b,
                                      Precision prec) {
  namespace ex = ops::exact;
  const int s = ex::slices(prec);
  auto code_of = [&](auto at) {
    float max_abs = 0.0f;
    bool nonfinite = false;
    for (int p = 0; p < k; ++p) {
      const float x = ops::round_operand(at(p), prec);
      if (!ex::is_finite(x)) nonfinite = true;
      else max_abs = std::max(max_abs, std::fabs(x));
    }
    return ex::line_code(max_abs, nonfinite);
  };
  std::vector<int32_t> row(m), col(n);
  for (int i = 0; i < m; ++i) row[i] = code_of([&](int p) { return a[static_cast<size_t>(i) * k + p]; });
  for (int j = 0; j < n; ++j) col[j] = code_of([&](int p) { return b[static_cast<size_t>(p) * n + j]; });
  auto operand = [&](float x, int32_t code) {
    const float r = ops::round_operand(x, prec);
    return ex::is_finite(r) ? ex::integer_operand(r, ex::code_exponent(code), s) : 0;
  };
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      __int128 S = 0;
      for (int p = 0; p < k; ++p)
        S += static_cast<__int128>(operand(a[static_cast<size_t>(i) * k + p], row[i])) *
             operand(b[static_cast<size_t>(p) * n + j], col[j]);
      const bool bad = ex::code_nonfinite(row[i]) || ex::code_nonfinite(col[j]);
      c[static_cast<size_t>(i) * n + j] =
          bad ? det::float_of_bits(0x7fc00000u)
              : ex::round_scaled_bits(S, ex::code_exponent(row[i]) + ex::code_exponent(col[j]) - 12 * s);
    }
  return c;
}

// Operands whose integers have every digit at its largest magnitude, of both signs, with NaN/Inf
// lines, zero lines, subnormals and one line of small values beside a large one: (rows, k) row-major.
std::vector<float> adversarial(int rows, int k, uint64_t seed, bool flipped) {
  const float top = std::nextafter(1.0f, 0.0f);  // 1 − 2^−24: X = ±(2^24 − 1), every 12-bit digit 4095
  std::vector<float> x(static_cast<size_t>(rows) * k);
  for (int i = 0; i < rows; ++i)
    for (int p = 0; p < k; ++p) {
      float& v = x[static_cast<size_t>(i) * k + p];
      const bool negative = flipped ? ((p * 7 + i + static_cast<int>(seed)) % 5 == 0) : false;
      v = negative ? -top : top;  // rows 0, 4, …: all at the largest digits
      if (i % 4 == 1) v = (p % 3 == 0) ? -top : std::ldexp(top, -(p % 24));
      if (i % 4 == 2) v = std::numeric_limits<float>::denorm_min() * static_cast<float>(1 + p % 1000);
      if (i % 4 == 3) v = p == k / 2 ? std::ldexp(1.0f, 100) : std::ldexp(top, -90 + p % 7);
    }
  if (rows > 5) x[static_cast<size_t>(5) * k + k - 1] = std::numeric_limits<float>::infinity();
  if (rows > 6) x[static_cast<size_t>(6) * k] = std::numeric_limits<float>::quiet_NaN();
  if (rows > 7) std::fill(x.begin() + static_cast<ptrdiff_t>(7) * k, x.begin() + static_cast<ptrdiff_t>(8) * k, 0.0f);
  return x;
}

}  // namespace

TEST_CASE("exact gemm: the int16 digit kernels give the definition's bits where int32 sums would wrap") {
  // Each kernel sums 2·kFlushPairs = 128 products of k in an int32 lane before widening: k = 128 ±
  // 1, 256 ± 1 cross that boundary; k = 50 257 (the GPT-2 vocabulary) many times.
  struct Shape {
    int m, n, k;
  };
  const std::vector<std::string> isas = isas_here();
  for (const Shape s : {Shape{9, 33, 127}, Shape{9, 33, 128}, Shape{9, 33, 129}, Shape{8, 40, 255}, Shape{8, 40, 257},
                        Shape{8, 3, 50257}})
    for (Precision prec : {Precision::fp32, Precision::bf16})
      for (bool flipped : {false, true}) {
        const auto a = adversarial(s.m, s.k, 1, flipped);
        const auto bt = adversarial(s.n, s.k, 2, !flipped);  // op(B)ᵀ: (n, k)
        std::vector<float> b(bt.size());
        for (int j = 0; j < s.n; ++j)
          for (int p = 0; p < s.k; ++p) b[static_cast<size_t>(p) * s.n + j] = bt[static_cast<size_t>(j) * s.k + p];
        const std::vector<float> expected = definition_product(s.m, s.n, s.k, a, b, prec);
        const std::vector<float> zero(expected.size());
        for (const std::string& isa : isas)
          for (int threads : {1, 2}) {
            ForcedIsa forced(isa.c_str());
            omp_set_num_threads(threads);
            CAPTURE(isa);
            CAPTURE(threads);
            CAPTURE(s.k);
            CAPTURE(flipped);
            CHECK(same_bits(exact_product(Trans::no, Trans::no, s.m, s.n, s.k, a, b, zero, false, prec), expected));
          }
        // The positive control: C[0][0]'s top digits (row 0 and column 0 are at 4095, E = F = 0)
        // summed in one int32 lane wrap past 2^31 at these k, and the S that wrapped lane gives
        // rounds to other bits than C[0][0]: a kernel that never widened would fail above.
        if (prec == Precision::fp32 && s.k >= 255) {
          namespace ex = ops::exact;
          const ex::Digits dg = ex::int16_digits(4);
          __int128 S = 0;
          int64_t wide = 0;
          uint32_t lane = 0;
          for (int p = 0; p < s.k; ++p) {
            const float x = a[static_cast<size_t>(p)], y = b[static_cast<size_t>(p) * s.n];
            const int32_t X = ex::is_finite(x) ? ex::integer_operand(x, 0, 4) : 0;
            const int32_t Y = ex::is_finite(y) ? ex::integer_operand(y, 0, 4) : 0;
            S += static_cast<__int128>(X) * Y;
            const int64_t top = int64_t{ex::digit(X, 0, dg)} * ex::digit(Y, 0, dg);
            wide += top;
            lane += static_cast<uint32_t>(top);
          }
          const __int128 wrapped = S + (static_cast<__int128>(static_cast<int32_t>(lane)) - wide) * (1 << 24);
          CHECK(wrapped != S);
          CHECK(det::bits_of(ex::round_scaled_bits(S, -48)) == det::bits_of(expected[0]));
          CHECK(det::bits_of(ex::round_scaled_bits(wrapped, -48)) != det::bits_of(expected[0]));
        }
      }
  omp_set_num_threads(1);
}

TEST_CASE("exact gemm: the int64 rounding path gives the integer rounding's bits") {
  namespace ex = ops::exact;
  std::vector<int64_t> values{0,
                              1,
                              -1,
                              3,
                              (int64_t{1} << 24) + 1,
                              (int64_t{1} << 24) + 3,
                              (int64_t{1} << 25) - 1,
                              std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::min(),
                              -(int64_t{1} << 62) - 1};
  uint64_t state = 12345;
  for (int r = 0; r < 2000; ++r) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    values.push_back(static_cast<int64_t>(state) >> (state % 63));
  }
  int misses = 0;
  for (const int64_t S : values)
    for (int q = -400; q <= 200; ++q) {
      CAPTURE(static_cast<long long>(S));
      CAPTURE(q);
      const uint32_t narrow = ex::round_scaled_narrow(S, q), bits = det::bits_of(ex::round_scaled_bits(S, q));
      if (narrow == ex::kNarrowMiss) {  // only results below the normal range take the integer path
        ++misses;
        REQUIRE((bits & 0x7f800000u) <= (1u << 23));
      } else {
        REQUIRE(narrow == bits);
      }
      REQUIRE(det::bits_of(ex::exact_element(S, q + 48, 0, 4, false)) == bits);
    }
  CHECK(misses > 0);
}
