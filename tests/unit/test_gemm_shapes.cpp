// The blocked canonical GEMM (core/cpu/matmul.cpp) over the shapes that stress its blocking: edges
// of the register tile, of the parallel task tiles and of the k-blocks, vectors (1×N, N×1), K = 1,
// K = 4099, the default model's linear-layer shapes in all three transpositions it runs, continued
// chains, bf16/fp16 operands, signed zeros and thread counts 1..4 — each compared bitwise with the
// contract's definition (one std::fma chain per output, k ascending, from +0 or from C).
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

struct GemmShape {
  Trans ta, tb;
  int m, n, k;
};

// op(X)(row, col) where X is stored row-major with leading dimension ld.
float op_at(const std::vector<float>& x, Trans t, int ld, int row, int col) {
  return t == Trans::no ? x[static_cast<size_t>(row) * ld + col] : x[static_cast<size_t>(col) * ld + row];
}

// Rule 1 as plainly as possible: c (m, n), ldc.
std::vector<float> reference(const GemmShape& s, const std::vector<float>& a, int lda, const std::vector<float>& b,
                             int ldb, const std::vector<float>& c0, int ldc, bool accumulate, Precision prec) {
  std::vector<float> c = c0;
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      float acc = accumulate ? c0[static_cast<size_t>(i) * ldc + j] : 0.0f;
      for (int p = 0; p < s.k; ++p)
        acc = std::fma(ops::round_operand(op_at(a, s.ta, lda, i, p), prec),
                       ops::round_operand(op_at(b, s.tb, ldb, p, j), prec), acc);
      c[static_cast<size_t>(i) * ldc + j] = acc;
    }
  return c;
}

// Runs shape s on `threads` threads and compares with the reference; returns whether equal.
bool check_shape(Backend& be, const GemmShape& s, bool accumulate, Precision prec, int threads, uint32_t seed) {
  const int lda = (s.ta == Trans::no ? s.k : s.m) + 1;
  const int ldb = (s.tb == Trans::no ? s.n : s.k) + 2;
  const int ldc = s.n + 3;
  // a (rows of storage, lda), b (rows of storage, ldb), c (m, ldc)
  const auto a = test::uniform(static_cast<size_t>(s.ta == Trans::no ? s.m : s.k) * lda, seed);
  const auto b = test::uniform(static_cast<size_t>(s.tb == Trans::no ? s.k : s.n) * ldb, seed + 1);
  const auto c0 = test::uniform(static_cast<size_t>(s.m) * ldc, seed + 2);
  auto c = c0;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  be.gemm({s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc, accumulate, prec});
  omp_set_num_threads(saved);
  return test::same_bits(c, reference(s, a, lda, b, ldb, c0, ldc, accumulate, prec), "gemm vs rule 1");
}

}  // namespace

TEST_CASE("canonical gemm: tile, task and k-block edges, every transposition, bitwise") {
  auto be = make_cpu_backend();
  // m around the register tile's rows (4, 6, 8, 14) and the task tile (8 panels);
  // n around 8, 16, 32, 64 columns; k around the 256-wide k-block.
  const int ms[] = {1, 5, 6, 7, 8, 9, 13, 14, 15, 29, 65, 113};
  const int ns[] = {1, 7, 8, 17, 31, 32, 33, 64, 130};
  const int ks[] = {1, 2, 255, 256, 257, 513};
  uint32_t seed = 100;
  for (int m : ms)
    for (int n : ns)
      for (int k : ks) {
        const Trans ta = (m + k) % 2 ? Trans::yes : Trans::no;
        const Trans tb = (n + k) % 2 ? Trans::yes : Trans::no;
        const bool accumulate = (m + n) % 2 == 0;
        const GemmShape s{ta, tb, m, n, k};
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(ta));
        CAPTURE(static_cast<int>(tb));
        CAPTURE(accumulate);
        CHECK(check_shape(*be, s, accumulate, Precision::fp32, 1 + (m + n + k) % 4, seed += 3));
      }
}

TEST_CASE("canonical gemm: vectors, K = 1 and K = 4099 in all transpositions and precisions") {
  auto be = make_cpu_backend();
  const GemmShape base[] = {{Trans::no, Trans::no, 1, 300, 77},   {Trans::no, Trans::no, 300, 1, 77},
                            {Trans::no, Trans::no, 1, 1, 4099},   {Trans::no, Trans::no, 45, 39, 1},
                            {Trans::no, Trans::no, 19, 37, 4099}, {Trans::no, Trans::no, 1, 70, 4099}};
  uint32_t seed = 7000;
  for (GemmShape s : base)
    for (Trans ta : {Trans::no, Trans::yes})
      for (Trans tb : {Trans::no, Trans::yes})
        for (Precision prec : {Precision::fp32, Precision::bf16, Precision::fp16})
          for (bool accumulate : {false, true}) {
            s.ta = ta, s.tb = tb;
            CAPTURE(s.m);
            CAPTURE(s.n);
            CAPTURE(s.k);
            CAPTURE(static_cast<int>(ta));
            CAPTURE(static_cast<int>(tb));
            CAPTURE(static_cast<int>(prec));
            CAPTURE(accumulate);
            CHECK(check_shape(*be, s, accumulate, prec, 2, seed += 3));
          }
}

TEST_CASE("canonical gemm: the default model's linear layers, forward and both gradients, 1..4 threads") {
  auto be = make_cpu_backend();
  const int N = 512;  // tokens of one leaf: 4 sequences × 128
  uint32_t seed = 9000;
  for (auto [C, OC] : {std::pair{128, 384}, {128, 128}, {128, 512}, {512, 128}, {128, 256}}) {
    const GemmShape shapes[] = {{Trans::no, Trans::yes, N, OC, C},   // forward: x · wᵀ
                                {Trans::no, Trans::no, N, C, OC},    // input gradient: dy · w
                                {Trans::yes, Trans::no, OC, C, N}};  // weight gradient: dyᵀ · x
    for (const GemmShape& s : shapes) {
      const int threads = 1 + static_cast<int>(seed % 4);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(threads);
      CHECK(check_shape(*be, s, false, Precision::fp32, threads, seed += 5));
    }
  }
}

TEST_CASE("canonical gemm: the LM head's forms (k-outer, streamed op(A), streamed op(B)), bitwise") {
  // matmul.cpp packs long-k products into a small C one k-block at a time (gemm_k_outer: C <= 1 MiB,
  // packed operands >= 4 MiB) and a very wide or tall product one block of panels at a time
  // (gemm_streamed: the other operand <= 1 MiB packed, this one >= 4 MiB). These shapes take
  // those forms, with ragged tiles at every edge: the head's dX (k = vocabulary), logits (n) and dW (m).
  auto be = make_cpu_backend();
  const GemmShape shapes[] = {{Trans::no, Trans::no, 41, 37, 16411},  {Trans::yes, Trans::yes, 41, 37, 16411},
                              {Trans::no, Trans::yes, 17, 3617, 301}, {Trans::yes, Trans::no, 17, 3617, 301},
                              {Trans::yes, Trans::no, 3617, 17, 301}, {Trans::no, Trans::yes, 3617, 17, 301}};
  uint32_t seed = 12000;
  int index = 0;
  for (const GemmShape& s : shapes) {
    const bool accumulate = index % 2 == 0;  // each form with and without, fp32 and bf16
    const Precision prec = index++ % 3 == 1 ? Precision::bf16 : Precision::fp32;
    for (int threads : {1, 3}) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(threads);
      CHECK(check_shape(*be, s, accumulate, prec, threads, seed += 7));
    }
  }
}

TEST_CASE("canonical gemm: the same bits on 1, 2, 3 and 4 threads for a multi-task shape") {
  auto be = make_cpu_backend();
  const GemmShape s{Trans::no, Trans::yes, 203, 301, 517};
  for (int threads = 1; threads <= 4; ++threads)
    for (Precision prec : {Precision::fp32, Precision::bf16}) {
      CAPTURE(threads);
      CAPTURE(static_cast<int>(prec));
      CHECK(check_shape(*be, s, true, prec, threads, 31));
    }
}

TEST_CASE("canonical gemm: a fresh chain starts at +0, so all -0 products give +0") {
  auto be = make_cpu_backend();
  const int m = 9, n = 40, k = 300;
  std::vector<float> a(static_cast<size_t>(m) * k, -0.0f), b(static_cast<size_t>(k) * n, 1.0f);
  std::vector<float> c(static_cast<size_t>(m) * n, 5.0f);
  be->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, c.data(), n, false, Precision::fp32});
  bool all_positive_zero = true;
  for (float x : c) all_positive_zero = all_positive_zero && x == 0.0f && !std::signbit(x);
  CHECK(all_positive_zero);
}
