// The exact GEMM on the GPU (numerics.gemm = exact; the definition: ops/exact_gemm.hpp and
// docs/CONTRACT.md). Each row of op(A) and column of op(B) is sliced by ops::exact (scale exponent
// from the exact max, integer operand, s digits) into int8 words, four digits of k each; every
// slice pair's dot is an exact int32 from __dp4a (k·63² < 2³¹), the pairs are summed per weight in
// int64 and rounded once by ops::exact — the integers of core/cpu/exact_*, so the CPU's bits for
// every launch, tile and GPU.
#include <cstdint>

#include "cuda_backend_class.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

namespace sb::cuda {
namespace {

namespace ex = ops::exact;

constexpr int kWarp = 32;
constexpr int kTile = 16;  // 16 × 16 outputs per block, k staged 16 words (64 digits) at a time

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
      const int64_t X = ex::is_finite(x) ? ex::integer_operand(x, E, L.s) : 0;
      for (int t = 0; t < L.s; ++t) word[t] |= (static_cast<uint32_t>(ex::digit(X, t, L.s)) & 0xffu) << (8 * b);
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

// A kTile × kTile block of C per block of threads, one output per thread: s² int32 dots by __dp4a
// over the words staged in shared memory, then ops::exact's sum and single rounding.
template <int S>
__global__ void exact_dots_kernel(ExactDots g) {
  __shared__ int32_t As[S][kTile][kTile + 1], Bs[S][kTile][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int i0 = static_cast<int>(blockIdx.y) * kTile, j0 = static_cast<int>(blockIdx.x) * kTile;
  int32_t dot[S][S] = {};
  for (int w0 = 0; w0 < g.words; w0 += kTile) {
    const bool in_k = w0 + tx < g.words;
    for (int t = 0; t < S; ++t) {
      As[t][ty][tx] = in_k && i0 + ty < g.m ? g.a[(static_cast<int64_t>(t) * g.m + i0 + ty) * g.words + w0 + tx] : 0;
      Bs[t][ty][tx] = in_k && j0 + ty < g.n ? g.b[(static_cast<int64_t>(t) * g.n + j0 + ty) * g.words + w0 + tx] : 0;
    }
    __syncthreads();
    for (int w = 0; w < kTile; ++w)
      for (int t = 0; t < S; ++t)
        for (int u = 0; u < S; ++u) dot[t][u] = __dp4a(As[t][ty][w], Bs[u][tx][w], dot[t][u]);
    __syncthreads();
  }
  const int i = i0 + ty, j = j0 + tx;
  if (i >= g.m || j >= g.n) return;
  int64_t by_weight[2 * S - 1] = {};
  for (int t = 0; t < S; ++t)
    for (int u = 0; u < S; ++u) by_weight[t + u] += dot[t][u];
  float* c = g.c + static_cast<int64_t>(i) * g.ldc + j;
  *c = ex::exact_output(ex::slice_dot(by_weight, 1, S, ex::narrow_dot(g.k, S)), g.row_exp[i], g.col_exp[j], S,
                        g.row_bad[i] != 0 || g.col_bad[j] != 0, g.accumulate, *c);
}

void slice_lines(const SliceLines& L, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (static_cast<int64_t>(L.lines) * kWarp + kThreads - 1) / kThreads;
  slice_lines_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(L);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::gemm_exact(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                             float* c, int ldc, bool accumulate, Precision precision) {
  SB_CHECK(k <= ex::kMaxK, "numerics.gemm=exact sums slice products in int32, exact while k·63² < 2³¹: k must be ",
           "at most ", ex::kMaxK, ", got k=", k, "; use numerics.gemm=canonical for this product");
  const int s = ex::slices(precision), words = (k + 3) / 4;
  const int64_t grid_y = (static_cast<int64_t>(m) + kTile - 1) / kTile;
  SB_CHECK(grid_y <= 65535, "exact GEMM: m=", m, " needs ", grid_y, " row blocks, more than the grid's 65535");
  auto* wa = static_cast<int32_t*>(scratch(Scratch::gemm_a, static_cast<size_t>(s) * m * words * sizeof(int32_t)));
  auto* wb = static_cast<int32_t*>(scratch(Scratch::gemm_b, static_cast<size_t>(s) * n * words * sizeof(int32_t)));
  // Per line of A, then of B: the scale exponent (int) and the non-finite flag (byte).
  const size_t lines = static_cast<size_t>(m) + n;
  auto* meta = static_cast<char*>(scratch(Scratch::exact_lines, lines * (sizeof(int) + 1)));
  int* exp = reinterpret_cast<int*>(meta);
  auto* bad = reinterpret_cast<uint8_t*>(meta + lines * sizeof(int));
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  slice_lines({a, at ? lda : 1, at ? 1 : lda, m, k, words, s, precision, wa, exp, bad}, stream());
  slice_lines({b, bt ? 1 : ldb, bt ? ldb : 1, n, k, words, s, precision, wb, exp + m, bad + m}, stream());
  const ExactDots g{wa, wb, exp, bad, exp + m, bad + m, m, n, k, words, c, ldc, accumulate};
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>(grid_y)), block(kTile, kTile);
  if (s == 4) exact_dots_kernel<4><<<grid, block, 0, stream()>>>(g);
  else exact_dots_kernel<2><<<grid, block, 0, stream()>>>(g);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::cuda
