// Backend::syrk on the CPU (C = op(A)·op(A)ᵀ: the upper triangle's tiles, A panels read out of the
// B panels, then mirrored) for n around the register tile and task edges and k around the k-block,
// both transpositions, fp32/bf16/fp16 operands, 1..3 threads: bitwise equal to the contract's
// definition (one std::fma chain per output, k ascending, from +0, C's previous values ignored) and
// to the plain gemm of op(A) and op(A)ᵀ; columns beyond n untouched; for a symmetric S, syrk(S)
// equals the gemm S·S; Newton–Schulz's shapes of the default model.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

Trans other(Trans t) { return t == Trans::no ? Trans::yes : Trans::no; }

// op(A)[row][p] of A stored row-major with leading dimension ld.
float op_at(const std::vector<float>& a, Trans t, int ld, int row, int p) {
  return t == Trans::no ? a[static_cast<size_t>(row) * ld + p] : a[static_cast<size_t>(p) * ld + row];
}

// Rule 1 as plainly as possible: c (n, n) with ldc, columns beyond n kept.
std::vector<float> reference(Trans ta, int n, int k, const std::vector<float>& a, int lda, const std::vector<float>& c0,
                             int ldc, Precision prec) {
  std::vector<float> c = c0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int p = 0; p < k; ++p)
        acc = std::fma(ops::round_operand(op_at(a, ta, lda, i, p), prec),
                       ops::round_operand(op_at(a, ta, lda, j, p), prec), acc);
      c[static_cast<size_t>(i) * ldc + j] = acc;
    }
  return c;
}

// syrk on `threads` threads against the reference and the plain gemm.
bool check(Backend& be, Trans ta, int n, int k, Precision prec, int threads, uint32_t seed) {
  const int lda = (ta == Trans::no ? k : n) + 3, ldc = n + 5;
  const auto a = test::uniform(static_cast<size_t>(ta == Trans::no ? n : k) * lda, seed);
  const auto c0 = test::uniform(static_cast<size_t>(n) * ldc, seed + 1);
  auto sym = c0, plain = c0;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  be.syrk(sb::ops::syrk_problem(ta, n, k, a.data(), lda, sym.data(), ldc, prec));
  be.gemm({ta, other(ta), n, n, k, a.data(), lda, a.data(), lda, plain.data(), ldc, false, prec});
  omp_set_num_threads(saved);
  const bool vs_rule = test::same_bits(sym, reference(ta, n, k, a, lda, c0, ldc, prec), "syrk vs rule 1");
  const bool vs_gemm = test::same_bits(sym, plain, "syrk vs gemm");
  return vs_rule && vs_gemm;
}

}  // namespace

TEST_CASE("syrk: tile, task and k-block edges, both transpositions, bitwise") {
  auto be = make_cpu_backend();
  const int ns[] = {1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 97};
  const int ks[] = {1, 3, 255, 256, 257, 513};
  uint32_t seed = 500;
  for (int n : ns)
    for (int k : ks)
      for (Trans ta : {Trans::no, Trans::yes}) {
        const int threads = 1 + (n + k) % 3;
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(ta));
        CAPTURE(threads);
        CHECK(check(*be, ta, n, k, Precision::fp32, threads, seed += 3));
      }
}

TEST_CASE("syrk: bf16 and fp16 operands, 1..3 threads") {
  auto be = make_cpu_backend();
  uint32_t seed = 900;
  for (Precision prec : {Precision::bf16, Precision::fp16})
    for (int threads = 1; threads <= 3; ++threads)
      for (Trans ta : {Trans::no, Trans::yes}) {
        CAPTURE(static_cast<int>(prec));
        CAPTURE(threads);
        CAPTURE(static_cast<int>(ta));
        CHECK(check(*be, ta, 77, 301, prec, threads, seed += 3));
      }
}

TEST_CASE("syrk: Newton–Schulz's shapes of the default model (X·Xᵀ, r = 128, c = 128..512)") {
  auto be = make_cpu_backend();
  uint32_t seed = 1300;
  for (int c : {128, 384, 512}) {
    CAPTURE(c);
    CHECK(check(*be, Trans::no, 128, c, Precision::fp32, 2, seed += 3));
  }
}

TEST_CASE("syrk of a symmetric S is the gemm S·S, bitwise") {
  auto be = make_cpu_backend();
  for (int n : {1, 9, 40, 128, 131}) {
    const int ld = n + 1;
    auto s = test::uniform(static_cast<size_t>(n) * ld, static_cast<uint32_t>(n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) s[static_cast<size_t>(i) * ld + j] = s[static_cast<size_t>(j) * ld + i];
    std::vector<float> ss(static_cast<size_t>(n) * n), gemm_ss(ss.size());
    be->syrk(sb::ops::syrk_problem(Trans::no, n, n, s.data(), ld, ss.data(), n, Precision::fp32));
    be->gemm({Trans::no, Trans::no, n, n, n, s.data(), ld, s.data(), ld, gemm_ss.data(), n, false, Precision::fp32});
    CAPTURE(n);
    CHECK(test::same_bits(ss, gemm_ss, "syrk(S) vs S·S"));
  }
}
