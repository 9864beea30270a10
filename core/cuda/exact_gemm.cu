// The exact GEMM on the GPU (numerics.gemm = exact; the definition: ops/exact_gemm.hpp and
// docs/CONTRACT.md). Each row of op(A) and column of op(B) is sliced by ops::exact (scale exponent
// from the exact max, integer operand, s digits) into int8 words, four digits of k each; the slice
// products run on the int8 tensor cores (mma.sync m16n8k32, int32 accumulation, exact), the pairs
// are summed per weight in int64 and rounded once by ops::exact — the integers of core/cpu/exact_*,
// so the CPU's bits for every launch, tile and GPU.
#include <cstdint>

#include "cuda_backend_class.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "the exact GEMM's int8 tensor-core kernel (mma.sync m16n8k32 .s8) needs sm_80 or newer"
#endif

namespace sb::cuda {
namespace {

namespace ex = ops::exact;

constexpr int kWarp = 32;

// One operand's lines (rows of op(A) or columns of op(B)): element (i, p) at base[p·step_p +
// i·step_i], rounded to the GEMM precision; out: (s, lines, words) int32 words of four signed
// digits (digit of k = 4w + b in byte b), exp and bad (lines).
struct SliceLines {
  const float* base;
  int64_t step_p, step_i;
  int lines, k, words, s;
  Precision prec;
  int32_t* out;
  int* exp;
  uint8_t* bad;
  __device__ float at(int i, int p) const { return ops::round_operand(base[p * step_p + i * step_i], prec); }
};

// One warp per line: the largest finite magnitude (the max of |x|'s bits: exact in any order) and
// whether a NaN or an Inf is present, then every word of the line's digits.
__global__ void slice_lines_kernel(SliceLines L) {
  const int i = static_cast<int>((static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp);
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (i >= L.lines) return;
  uint32_t max_bits = 0;
  bool nonfinite = false;
  for (int p = lane; p < L.k; p += kWarp) {
    const float x = L.at(i, p);
    if (!ex::is_finite(x)) nonfinite = true;
    else max_bits = max(max_bits, det::bits_of(x) & 0x7fffffffu);
  }
  for (int d = kWarp / 2; d >= 1; d /= 2) max_bits = max(max_bits, __shfl_xor_sync(0xffffffffu, max_bits, d));
  nonfinite = __any_sync(0xffffffffu, nonfinite);
  const int E = ex::scale_exponent(det::float_of_bits(max_bits));
  if (lane == 0) {
    L.exp[i] = E;
    L.bad[i] = nonfinite ? 1 : 0;
  }
  for (int w = lane; w < L.words; w += kWarp) {
    uint32_t word[4] = {};  // per slice t < s ≤ 4
    for (int b = 0; b < 4; ++b) {
      const int p = 4 * w + b;
      if (p >= L.k) break;
      const float x = L.at(i, p);
      const int32_t X = ex::is_finite(x) ? ex::integer_operand(x, E, L.s) : 0;
      for (int t = 0; t < L.s; ++t)
        word[t] |= (static_cast<uint32_t>(ex::digit(X, t, ex::int8_digits(L.s))) & 0xffu) << (8 * b);
    }
    for (int t = 0; t < L.s; ++t)
      L.out[(static_cast<int64_t>(t) * L.lines + i) * L.words + w] = static_cast<int32_t>(word[t]);
  }
}

// C (m, n; ldc) ← the exact products of the sliced lines a (s, m, words) and b (s, n, words).
struct ExactDots {
  const int32_t* a;
  const int32_t* b;
  const int* row_exp;
  const uint8_t* row_bad;
  const int* col_exp;
  const uint8_t* col_bad;
  int m, n, k, words;
  float* c;
  int ldc;
  bool accumulate;
};

// The int8 tensor cores (sm_80+): D = A·B + D on 16 × 8 outputs from 32 digits of k, exact in int32.
// Fragments (PTX ISA, mma.m16n8k32 .s8): g = lane / 4, q = lane % 4; a[0..3] hold the words q, q,
// q + 4, q + 4 of rows g, g + 8, g, g + 8; b[0..1] the words q, q + 4 of column g; d[0..3] the
// outputs (g, 2q), (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1).
__device__ __forceinline__ void mma_s8(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

constexpr int kBlock = 32;        // 32 × 32 outputs per block: 2 × 2 warps of 16 × 16 (one m16, two n8)
constexpr int kStage = 32;        // words of k (128 digits) staged in shared memory at a time
constexpr int kPad = kStage + 4;  // row stride: the fragment reads of a warp hit 32 distinct banks
constexpr int kChunk = 1 << 15;   // words (131 072 digits) summed in int32 before widening to int64:
                                  // ≤ s pairs of one weight · 131 072 · 63² < 2³¹
constexpr int kWarpsN = 2;

// The slice pairs of one weight v = t + u share an int32 accumulator per output (exact over a
// chunk of k), widened into int64 at the chunk's end; the epilogue is ops::exact's sum and single
// rounding, as on the CPU.
template <int S>
__global__ void __launch_bounds__(128) exact_dots_kernel(ExactDots g) {
  __shared__ int32_t As[S][kBlock][kPad], Bs[S][kBlock][kPad];
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarp, warp = tid / kWarp;
  const int gr = lane / 4, q = lane % 4;
  const int wm = (warp / kWarpsN) * 16, wn = (warp % kWarpsN) * 16;
  const int i0 = static_cast<int>(blockIdx.y) * kBlock, j0 = static_cast<int>(blockIdx.x) * kBlock;
  constexpr int V = 2 * S - 1;
  int32_t acc[V][2][4] = {};
  int64_t wide[V][2][4] = {};
  for (int w0 = 0; w0 < g.words; w0 += kStage) {
    for (int e = tid; e < S * kBlock * kStage; e += 128) {
      const int t = e / (kBlock * kStage), line = (e / kStage) % kBlock, w = e % kStage;
      const bool in_k = w0 + w < g.words;
      As[t][line][w] =
          in_k && i0 + line < g.m ? g.a[(static_cast<int64_t>(t) * g.m + i0 + line) * g.words + w0 + w] : 0;
      Bs[t][line][w] =
          in_k && j0 + line < g.n ? g.b[(static_cast<int64_t>(t) * g.n + j0 + line) * g.words + w0 + w] : 0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kStage; kk += 8) {
      uint32_t af[S][4], bf[S][2][2];
#pragma unroll
      for (int t = 0; t < S; ++t) {
        af[t][0] = static_cast<uint32_t>(As[t][wm + gr][kk + q]);
        af[t][1] = static_cast<uint32_t>(As[t][wm + gr + 8][kk + q]);
        af[t][2] = static_cast<uint32_t>(As[t][wm + gr][kk + q + 4]);
        af[t][3] = static_cast<uint32_t>(As[t][wm + gr + 8][kk + q + 4]);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          bf[t][nt][0] = static_cast<uint32_t>(Bs[t][wn + 8 * nt + gr][kk + q]);
          bf[t][nt][1] = static_cast<uint32_t>(Bs[t][wn + 8 * nt + gr][kk + q + 4]);
        }
      }
#pragma unroll
      for (int t = 0; t < S; ++t)
#pragma unroll
        for (int u = 0; u < S; ++u)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) mma_s8(acc[t + u][nt], af[t], bf[u][nt]);
    }
    __syncthreads();
    if ((w0 + kStage) % kChunk == 0 || w0 + kStage >= g.words)
#pragma unroll
      for (int v = 0; v < V; ++v)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            wide[v][nt][r] += acc[v][nt][r];
            acc[v][nt][r] = 0;
          }
  }
  const bool narrow = ex::narrow_dot(g.k, S);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = i0 + wm + gr + (r >= 2 ? 8 : 0), j = j0 + wn + 8 * nt + 2 * q + (r & 1);
      if (i >= g.m || j >= g.n) continue;
      int64_t by_weight[V];
#pragma unroll
      for (int v = 0; v < V; ++v) by_weight[v] = wide[v][nt][r];
      float* c = g.c + static_cast<int64_t>(i) * g.ldc + j;
      *c = ex::exact_output(ex::slice_dot(by_weight, 1, ex::int8_digits(S), narrow), g.row_exp[i], g.col_exp[j], S,
                            g.row_bad[i] != 0 || g.col_bad[j] != 0, g.accumulate, *c);
    }
}

void slice_lines(const SliceLines& L, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (static_cast<int64_t>(L.lines) * kWarp + kThreads - 1) / kThreads;
  slice_lines_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(L);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::gemm_exact(const ops::GemmProblem& g) {
  const int m = g.m, n = g.n, k = g.k;
  const Precision precision = g.precision;
  SB_CHECK(k <= ex::kMaxK, "numerics.gemm=exact sums slice products in int32, exact while k·63² < 2³¹: k must be ",
           "at most ", ex::kMaxK, ", got k=", k, "; use numerics.gemm=canonical for this product");
  const int s = ex::slices(precision), words = (k + 3) / 4;
  const int64_t grid_y = (static_cast<int64_t>(m) + kBlock - 1) / kBlock;
  SB_CHECK(grid_y <= 65535, "exact GEMM: m=", m, " needs ", grid_y, " row blocks, more than the grid's 65535");
  auto* wa = static_cast<int32_t*>(scratch(Scratch::gemm_a, static_cast<size_t>(s) * m * words * sizeof(int32_t)));
  auto* wb = static_cast<int32_t*>(scratch(Scratch::gemm_b, static_cast<size_t>(s) * n * words * sizeof(int32_t)));
  // Per line of A, then of B: the scale exponent (int) and the non-finite flag (byte).
  const size_t lines = static_cast<size_t>(m) + n;
  auto* meta = static_cast<char*>(scratch(Scratch::exact_lines, lines * (sizeof(int) + 1)));
  int* exp = reinterpret_cast<int*>(meta);
  auto* bad = reinterpret_cast<uint8_t*>(meta + lines * sizeof(int));
  const bool at = g.a_transposed(), bt = g.b_transposed();
  slice_lines({g.a, at ? g.lda : 1, at ? 1 : g.lda, m, k, words, s, precision, wa, exp, bad}, stream());
  slice_lines({g.b, bt ? 1 : g.ldb, bt ? g.ldb : 1, n, k, words, s, precision, wb, exp + m, bad + m}, stream());
  const ExactDots dots{wa, wb, exp, bad, exp + m, bad + m, m, n, k, words, g.c, g.ldc, g.accumulate};
  const dim3 grid(static_cast<unsigned>((n + kBlock - 1) / kBlock), static_cast<unsigned>(grid_y));
  if (s == 4) exact_dots_kernel<4><<<grid, 128, 0, stream()>>>(dots);
  else exact_dots_kernel<2><<<grid, 128, 0, stream()>>>(dots);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
