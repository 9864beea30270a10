// GEMM and the linear layer on the GPU. Canonical (rule 1): the tiled SIMT kernel of gemm_tile.cuh
// — one fma chain per output over k ascending from +0 (or C), continued across k-tiles, operands
// rounded to the GEMM precision as they are staged — bitwise core/cpu/matmul.cpp for every tile
// shape. Bias and its gradient: ops/matmul.hpp, the gradient a token-ascending chain (rule 3).
// Exact (gemm=exact): exact_gemm.cu; bf16 pairs (bf16_dot=pairs): bf16_pairs.cu. Vendor (gemm=vendor): cuBLAS SGEMM
// (TF32 tensor cores when selected) or cublasGemmEx on bf16 / fp16 copies of the operands. The backend picks its mode's
// engine once, when made.

#include <array>
#include <cstdint>

#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "gemm_tile.cuh"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fp_formats.hpp"
#include "token_reduce.cuh"

namespace sb {

namespace cuda {
namespace {

using Tile0 = GemmTile<128, 128, 8, 8, 8, 2>;  // 256 threads, 2 blocks per SM: large matrices
using Tile1 = GemmTile<64, 64, 16, 4, 4>;      // 256 threads
using Tile2 = GemmTile<128, 64, 8, 8, 4>;      // 256 threads
using Tile3 = GemmTile<32, 32, 8, 4, 4>;       // 64 threads: small matrices
using Tile4 = GemmTile<128, 128, 8, 8, 8>;     // tile 0 with the registers of 1 block per SM
using Tile5 = GemmTile<128, 128, 16, 8, 8>;    // tile 4 with half the k-tiles (and barriers)
using Tile6 = GemmTile<128, 256, 8, 8, 16>;    // 256 threads, 8 x 16 outputs each
using Tile7 = GemmTile<256, 128, 8, 16, 8>;    // 256 threads, 16 x 8 outputs each
using Tile8 = GemmTile<64, 128, 8, 8, 8, 4>;   // 128 threads, 4 blocks per SM

template <class T>
constexpr CudaGemmTile tile_of() {
  return {T::BM, T::BN, T::BK, T::TM, T::TN, T::MIN_BLOCKS};
}
constexpr std::array<CudaGemmTile, 9> kTiles = {tile_of<Tile0>(), tile_of<Tile1>(), tile_of<Tile2>(),
                                                tile_of<Tile3>(), tile_of<Tile4>(), tile_of<Tile5>(),
                                                tile_of<Tile6>(), tile_of<Tile7>(), tile_of<Tile8>()};

// Whether float4 staging is exact for this GEMM: both operands 16-byte aligned with leading
// dimensions that are multiples of 4, and each operand's contiguous dimension (k for A, n for B;
// m and k when transposed) a multiple of 4, so a unit of 4 never straddles the operand's edge.
bool gemm_vectorizable(const ops::GemmProblem& g, bool ta, bool tb) {
  auto aligned = [](const float* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return aligned(g.a) && aligned(g.b) && g.lda % 4 == 0 && g.ldb % 4 == 0 && (ta ? g.m : g.k) % 4 == 0 &&
         (tb ? g.k : g.n) % 4 == 0;
}

template <class Tile, bool TA, bool TB>
void launch_gemm(const ops::GemmProblem& g, const dim3& grid, cudaStream_t stream) {
  if (gemm_vectorizable(g, TA, TB)) gemm_canonical_kernel<Tile, TA, TB, true><<<grid, Tile::kThreads, 0, stream>>>(g);
  else gemm_canonical_kernel<Tile, TA, TB, false><<<grid, Tile::kThreads, 0, stream>>>(g);
}

template <class Tile>
void launch_gemm(const ops::GemmProblem& g, bool ta, bool tb, cudaStream_t stream) {
  const int64_t row_tiles = (static_cast<int64_t>(g.m) + Tile::BM - 1) / Tile::BM;
  SB_CHECK(row_tiles <= 65535, "canonical GEMM: m=", g.m, " needs ", row_tiles, " row tiles of ", Tile::BM,
           ", more than the grid's 65535; use a larger tile");
  const dim3 grid(static_cast<unsigned>((g.n + Tile::BN - 1) / Tile::BN), static_cast<unsigned>(row_tiles));
  if (ta) {
    if (tb) launch_gemm<Tile, true, true>(g, grid, stream);
    else launch_gemm<Tile, true, false>(g, grid, stream);
  } else {
    if (tb) launch_gemm<Tile, false, true>(g, grid, stream);
    else launch_gemm<Tile, false, false>(g, grid, stream);
  }
  SB_CUDA_CHECK_LAUNCH();
}

// The largest tile that still gives every SM a block (speed only: every tile gives the same bits).
int auto_tile(int m, int n, int sm_count) {
  for (int t : {0, 2, 1}) {
    const int64_t blocks = ((static_cast<int64_t>(m) + kTiles[t].bm - 1) / kTiles[t].bm) *
                           ((static_cast<int64_t>(n) + kTiles[t].bn - 1) / kTiles[t].bn);
    if (blocks >= sm_count) return t;
  }
  return 3;
}

// dst[i] = the bf16 / fp16 encoding of src[i] (RNE, det::fp_formats).
struct To16Bit {
  uint16_t* dst;     // (n)
  const float* src;  // (n)
  Precision p;
  __device__ void operator()(int64_t i) const {
    dst[i] = p == Precision::bf16 ? det::bf16_bits_from_f32(src[i]) : det::fp16_bits_from_f32(src[i]);
  }
};

// out[n][o] = ops::linear_out(out[n][o], bias[o]).
struct AddBias {
  float* out;         // (N, OC)
  const float* bias;  // (OC)
  int OC;
  __device__ void operator()(int64_t i) const { out[i] = ops::linear_out(out[i], bias[i % OC]); }
};

// dbias[o] ← token_sum_step(dbias[o], dout[n][o]) for n ascending.  dout: (N, OC)
struct BiasGradStep {
  const float* dout;
  int OC;
  __device__ float operator()(float acc, int n, int o) const {
    return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * OC + o]);
  }
};

}  // namespace

void CudaBackend::gemm_canonical(const ops::GemmProblem& g) {
  const bool at = g.a_transposed(), bt = g.b_transposed();
  const int tile = launch().gemm_tile >= 0 ? launch().gemm_tile : auto_tile(g.m, g.n, sm_count());
  switch (tile) {
    case 0: launch_gemm<Tile0>(g, at, bt, stream()); break;
    case 1: launch_gemm<Tile1>(g, at, bt, stream()); break;
    case 2: launch_gemm<Tile2>(g, at, bt, stream()); break;
    case 3: launch_gemm<Tile3>(g, at, bt, stream()); break;
    case 4: launch_gemm<Tile4>(g, at, bt, stream()); break;
    case 5: launch_gemm<Tile5>(g, at, bt, stream()); break;
    case 6: launch_gemm<Tile6>(g, at, bt, stream()); break;
    case 7: launch_gemm<Tile7>(g, at, bt, stream()); break;
    default: launch_gemm<Tile8>(g, at, bt, stream()); break;
  }
}

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS gets B first, n and m swapped.
void CudaBackend::gemm_vendor(const ops::GemmProblem& g) {
  const int m = g.m, n = g.n, k = g.k, lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  const float *a = g.a, *b = g.b;
  float* c = g.c;
  const bool accumulate = g.accumulate;
  const Precision precision = g.precision;
  if (k == 0) {  // C = beta·C: nothing to do when accumulating, zeros otherwise
    if (!accumulate)
      SB_CUDA_CHECK(cudaMemset2DAsync(c, static_cast<size_t>(ldc) * sizeof(float), 0,
                                      static_cast<size_t>(n) * sizeof(float), m, stream()));
    return;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const cublasOperation_t op_a = g.a_transposed() ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.b_transposed() ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (precision == Precision::fp32) {
    SB_CUBLAS_CHECK(cublasSgemm(cublas(), op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
    return;
  }
  // 16-bit copies of the stored operands: rows·ld elements, the last row only as wide as needed.
  const int64_t a_rows = g.a_rows(), a_cols = g.a_transposed() ? m : k;
  const int64_t b_rows = g.b_rows(), b_cols = g.b_transposed() ? k : n;
  const int64_t a_elems = (a_rows - 1) * lda + a_cols, b_elems = (b_rows - 1) * ldb + b_cols;
  auto* a16 = static_cast<uint16_t*>(scratch(Scratch::gemm_a, static_cast<size_t>(a_elems) * 2));
  auto* b16 = static_cast<uint16_t*>(scratch(Scratch::gemm_b, static_cast<size_t>(b_elems) * 2));
  for_each(*this, a_elems, To16Bit{a16, a, precision});
  for_each(*this, b_elems, To16Bit{b16, b, precision});
  const cudaDataType_t type = precision == Precision::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  SB_CUBLAS_CHECK(cublasGemmEx(cublas(), op_b, op_a, n, m, k, &alpha, b16, type, ldb, a16, type, lda, &beta, c,
                               CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The engine of numerics.gemm (and bf16_dot), chosen once when the backend is made (cuda_backend.cu).
CudaBackend::GemmEngine CudaBackend::gemm_engine_of(const Numerics& n) {
  if (n.gemm == GemmMode::canonical && n.bf16_dot == Bf16Dot::pairs) return &CudaBackend::gemm_pairs;
  return n.gemm == GemmMode::vendor  ? &CudaBackend::gemm_vendor
         : n.gemm == GemmMode::exact ? &CudaBackend::gemm_exact
                                     : &CudaBackend::gemm_canonical;
}

void CudaBackend::gemm(const ops::GemmProblem& g) {
  check_gemm(g);
  SB_CHECK(g.group == nullptr, "numerics.gemm=exact with parallel.tp > 1 runs on run.backend=cpu (this backend, ",
           describe(), ", has no k-split exact GEMM); use numerics.gemm=canonical");
  if (g.m == 0 || g.n == 0) return;
  activate();
  (this->*gemm_)(g.with_bias(nullptr));
  if (g.bias != nullptr) bias_forward(g.c, g.bias, g.m, g.n);
}

void CudaBackend::bias_forward(float* out, const float* bias, int N, int OC) {
  activate();
  for_each(*this, static_cast<int64_t>(N) * OC, AddBias{out, bias, OC});
}

void CudaBackend::bias_backward(float* dbias, const float* dout, int N, int OC) {
  activate();
  token_reduce(*this, dbias, N, OC, BiasGradStep{dout, OC});
}

}  // namespace cuda

std::span<const CudaGemmTile> cuda_gemm_tiles() { return cuda::kTiles; }

}  // namespace sb
