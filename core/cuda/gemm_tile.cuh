// The canonical SIMT GEMM kernel (docs/CONTRACT.md rule 1), parameterised by its tile shape: a block
// computes a BM × BN tile of C, each thread TM × TN outputs in registers, operands staged through
// double-buffered shared memory BK values of k at a time. Every output is one fma chain over k
// ascending that starts at +0 (or at C's value when accumulating) and continues across k-tiles —
// no split-K, no partial sums, no tensor cores — so the tile shape never changes a bit: each
// output equals ops::canonical_dot_rounded (bitwise core/cpu/matmul.cpp).
#pragma once
#include <cstddef>

#include "samebits/core/numerics.hpp"
#include "samebits/core/ops/gemm_problem.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/hd.hpp"

namespace sb::cuda {

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
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tiles are made of 4 x 4 sub-blocks");
  static_assert(BM % TM == 0 && BN % TN == 0, "the block tile must be a whole number of thread tiles");
  static_assert(BK % 4 == 0 && BM % 4 == 0 && BN % 4 == 0, "float4 staging units fit the tile");
};

// VEC: float4 loads of the operands. Only for launches where every unit of 4 values is aligned
// and lies wholly inside or wholly outside the operand (gemm_vectorizable); the bits are the same.
template <class Tile, bool TA, bool TB, bool VEC>
__global__ void __launch_bounds__(Tile::kThreads, Tile::MIN_BLOCKS) gemm_canonical_kernel(ops::GemmProblem g) {
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
      acc[i][j] = (g.accumulate && gi < g.m && gj < g.n) ? g.c[static_cast<size_t>(gi) * g.ldc + gj] : 0.0f;
    }
  }

  // Staging in units of G values that are consecutive along the stored operand's contiguous
  // dimension (G = 4: one float4 load; G = 1: one scalar load). Unit u of this thread is unit
  // e = tid + u·NT of the tile, so consecutive threads read consecutive addresses. A unit holds
  // op(A)(r .. r+G-1, kk) when A is stored transposed, else op(A)(r, kk .. kk+G-1); likewise B.
  constexpr int G = VEC ? 4 : 1;
  constexpr int A_UNITS = BM * BK / G, B_UNITS = BK * BN / G;
  constexpr int A_PER = (A_UNITS + NT - 1) / NT, B_PER = (B_UNITS + NT - 1) / NT;
  auto a_unit = [&](int u, int* r, int* kk) {
    const int e = tid + u * NT;
    if (TA) {
      *kk = e / (BM / G);
      *r = (e % (BM / G)) * G;
    } else {
      *r = e / (BK / G);
      *kk = (e % (BK / G)) * G;
    }
    return e < A_UNITS;
  };
  auto b_unit = [&](int u, int* col, int* kk) {
    const int e = tid + u * NT;
    if (TB) {
      *col = e / (BK / G);
      *kk = (e % (BK / G)) * G;
    } else {
      *kk = e / (BN / G);
      *col = (e % (BN / G)) * G;
    }
    return e < B_UNITS;
  };
  // G values from p (a unit's first element) rounded to the GEMM precision, or zeros when the
  // unit lies outside op(A) / op(B) (never part of a stored chain: rows ≥ m, k ≥ k are skipped).
  auto fetch = [&](const float* p, bool inside, float* dst) {
    if constexpr (VEC) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (inside) v = *reinterpret_cast<const float4*>(p);
      dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
    } else {
      dst[0] = inside ? *p : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < G; ++q) dst[q] = ops::round_operand(dst[q], g.precision);
  };
  float ra[A_PER * G], rb[B_PER * G];  // the next k-tile, held while the current one computes
  auto load = [&](int k0) {
#pragma unroll
    for (int u = 0; u < A_PER; ++u) {
      int r, kk;
      const bool live = a_unit(u, &r, &kk);
      const int gi = m0 + r, gk = k0 + kk;
      const bool inside = live && gi < g.m && gk < g.k;
      const size_t at = TA ? static_cast<size_t>(gk) * g.lda + gi : static_cast<size_t>(gi) * g.lda + gk;
      fetch(g.a + (inside ? at : 0), inside, ra + u * G);
    }
#pragma unroll
    for (int u = 0; u < B_PER; ++u) {
      int col, kk;
      const bool live = b_unit(u, &col, &kk);
      const int gj = n0 + col, gk = k0 + kk;
      const bool inside = live && gj < g.n && gk < g.k;
      const size_t at = TB ? static_cast<size_t>(gj) * g.ldb + gk : static_cast<size_t>(gk) * g.ldb + gj;
      fetch(g.b + (inside ? at : 0), inside, rb + u * G);
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int u = 0; u < A_PER; ++u) {
      int r, kk;
      if (!a_unit(u, &r, &kk)) continue;
      const float* v = ra + u * G;
      if constexpr (VEC && TA) {
        *reinterpret_cast<float4*>(&As[buf][kk][r]) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < G; ++q) {
          if (TA) As[buf][kk][r + q] = v[q];
          else As[buf][kk + q][r] = v[q];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < B_PER; ++u) {
      int col, kk;
      if (!b_unit(u, &col, &kk)) continue;
      const float* v = rb + u * G;
      if constexpr (VEC && !TB) {
        *reinterpret_cast<float4*>(&Bs[buf][kk][col]) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < G; ++q) {
          if (TB) Bs[buf][kk + q][col] = v[q];
          else Bs[buf][kk][col + q] = v[q];
        }
      }
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
