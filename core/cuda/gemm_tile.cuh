// The canonical SIMT GEMM kernel (DESIGN.md §1.1 rule 1), parameterised by its tile shape: a block
// computes a BM × BN tile of C, each thread TM × TN outputs in registers, operands staged through
// double-buffered shared memory BK values of k at a time. Every output is one fma chain over k
// ascending that starts at +0 (or at C's value when accumulating) and continues across k-tiles —
// no split-K, no partial sums, no tensor cores — so the tile shape never changes a bit: each
// output equals ops::canonical_dot_rounded (bitwise core/cpu/matmul.cpp).
#pragma once
#include <cstddef>

#include "samebits/core/numerics.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/hd.hpp"

namespace sb::cuda {

// C (m, n; ldc) = op(A) (m, k) · op(B) (k, n), row-major; A stored (m, k; lda), or (k, m) when
// transposed; B stored (k, n; ldb), or (n, k) when transposed. Operands are rounded to `precision`
// as they are staged (ops::round_operand).
struct GemmArgs {
  int m, n, k;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float* c;
  int ldc;
  bool accumulate;
  Precision precision;
};

// A tile shape as a type. A thread's outputs are TM/4 × TN/4 sub-blocks of 4 × 4 spread
// ROW_STRIDE rows and COL_STRIDE columns apart, so that a warp's float4 reads of a shared-memory
// row are contiguous (no bank conflicts). MIN_BLOCKS: blocks per SM the register budget must allow.
template <int BM_, int BN_, int BK_, int TM_, int TN_, int MIN_BLOCKS_ = 1>
struct GemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int MIN_BLOCKS = MIN_BLOCKS_;
  static constexpr int TX = BN / TN;  // threads along a row of the tile
  static constexpr int TY = BM / TM;  // threads along a column
  static constexpr int kThreads = TX * TY;
  static constexpr int ROW_STRIDE = TY * 4, COL_STRIDE = TX * 4;
  static constexpr int kPad = 4;  // shared rows of BM + 4 floats: conflict-free transposed stores
  static constexpr int A_LOADS = BM * BK / kThreads;  // operand values each thread stages per k-tile
  static constexpr int B_LOADS = BK * BN / kThreads;
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4 x 4 sub-blocks");
  static_assert(BM % TM == 0 && BN % TN == 0, "the block tile must be a whole number of thread tiles");
  static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0,
                "every thread stages the same number of operand values");
};

template <class Tile, bool TA, bool TB>
__global__ void __launch_bounds__(Tile::kThreads, Tile::MIN_BLOCKS) gemm_canonical_kernel(GemmArgs g) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
  constexpr int TX = Tile::TX, NT = Tile::kThreads, P = Tile::kPad;
  __shared__ __align__(16) float As[2][BK][BM + P];  // (2, BK, BM): op(A) tiles, k-major
  __shared__ __align__(16) float Bs[2][BK][BN + P];  // (2, BK, BN): op(B) tiles, k-major
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % TX, ty = tid / TX;
  const int m0 = static_cast<int>(blockIdx.y) * BM, n0 = static_cast<int>(blockIdx.x) * BN;
  // Tile-local row of the thread's output row i (i < TM) and column of output column j (j < TN).
  auto row_of = [&](int i) { return (i / 4) * Tile::ROW_STRIDE + ty * 4 + i % 4; };
  auto col_of = [&](int j) { return (j / 4) * Tile::COL_STRIDE + tx * 4 + j % 4; };

  float acc[TM][TN];  // the chains: +0, or C's values when accumulating
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gi = m0 + row_of(i), gj = n0 + col_of(j);
      acc[i][j] = (g.accumulate && gi < g.m && gj < g.n)
                      ? g.c[static_cast<size_t>(gi) * g.ldc + gj]
                      : 0.0f;
    }
  }

  // Staging: value l of this thread is element e = tid + l·NT of the tile, in the order that
  // makes consecutive threads read consecutive addresses of the stored operand.
  auto a_index = [&](int l, int* r, int* kk) {
    const int e = tid + l * NT;
    if (TA) { *kk = e / BM; *r = e % BM; } else { *r = e / BK; *kk = e % BK; }
  };
  auto b_index = [&](int l, int* col, int* kk) {
    const int e = tid + l * NT;
    if (TB) { *col = e / BK; *kk = e % BK; } else { *kk = e / BN; *col = e % BN; }
  };
  float ra[Tile::A_LOADS], rb[Tile::B_LOADS];  // the next k-tile, held while the current computes
  auto load = [&](int k0) {
#pragma unroll
    for (int l = 0; l < Tile::A_LOADS; ++l) {
      int r, kk;
      a_index(l, &r, &kk);
      const int gi = m0 + r, gk = k0 + kk;
      float v = 0.0f;  // outside op(A): never part of a stored chain (rows ≥ m, k ≥ k are skipped)
      if (gi < g.m && gk < g.k) {
        v = TA ? g.a[static_cast<size_t>(gk) * g.lda + gi] : g.a[static_cast<size_t>(gi) * g.lda + gk];
        v = ops::round_operand(v, g.precision);
      }
      ra[l] = v;
    }
#pragma unroll
    for (int l = 0; l < Tile::B_LOADS; ++l) {
      int col, kk;
      b_index(l, &col, &kk);
      const int gj = n0 + col, gk = k0 + kk;
      float v = 0.0f;
      if (gj < g.n && gk < g.k) {
        v = TB ? g.b[static_cast<size_t>(gj) * g.ldb + gk] : g.b[static_cast<size_t>(gk) * g.ldb + gj];
        v = ops::round_operand(v, g.precision);
      }
      rb[l] = v;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int l = 0; l < Tile::A_LOADS; ++l) {
      int r, kk;
      a_index(l, &r, &kk);
      As[buf][kk][r] = ra[l];
    }
#pragma unroll
    for (int l = 0; l < Tile::B_LOADS; ++l) {
      int col, kk;
      b_index(l, &col, &kk);
      Bs[buf][kk][col] = rb[l];
    }
  };
  // One step of every chain of the thread: acc[i][j] ← fma(A(i, k), B(k, j), acc[i][j]).
  auto step = [&](int buf, int kk) {
    float af[TM], bf[TN];
#pragma unroll
    for (int s = 0; s < TM / 4; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(&As[buf][kk][s * Tile::ROW_STRIDE + ty * 4]);
      af[4 * s + 0] = v.x, af[4 * s + 1] = v.y, af[4 * s + 2] = v.z, af[4 * s + 3] = v.w;
    }
#pragma unroll
    for (int s = 0; s < TN / 4; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][kk][s * Tile::COL_STRIDE + tx * 4]);
      bf[4 * s + 0] = v.x, bf[4 * s + 1] = v.y, bf[4 * s + 2] = v.z, bf[4 * s + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = det::fma_f32(af[i], bf[j], acc[i][j]);
    }
  };

  const int tiles = (g.k + BK - 1) / BK;
  if (tiles > 0) {
    load(0);
    store(0);
  }
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    const bool more = t + 1 < tiles;
    if (more) load((t + 1) * BK);
    const int kc = g.k - t * BK;  // k values in this tile: BK except in the last
    if (kc >= BK) {
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) step(buf, kk);
    } else {
      for (int kk = 0; kk < kc; ++kk) step(buf, kk);
    }
    // The other buffer was last read in iteration t − 1, which ended with a barrier.
    if (more) store(buf ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gi = m0 + row_of(i), gj = n0 + col_of(j);
      if (gi < g.m && gj < g.n) g.c[static_cast<size_t>(gi) * g.ldc + gj] = acc[i][j];
    }
  }
}

}  // namespace sb::cuda
