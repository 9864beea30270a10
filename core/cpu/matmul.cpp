// GEMM and the linear layer on the CPU. Canonical (rule 1): every C element is one fma chain over
// k ascending from +0 (or from C's value when accumulating); the kernel packs operands (rounding
// them to the GEMM precision; a full product's fp32 row-major op(A) is read in place), then
// register-blocked tiles continue each element's chain across k-blocks — no split-K, no partial
// sums. OpenMP over output tiles only: the bits do not depend
// on the thread count, the tile sizes or the SIMD width (bitwise equal to core/cuda/matmul.cu).
// syrk (C = op(A)·op(A)ᵀ) computes the upper triangle's tiles and mirrors them: the same chains.
// Vendor: OpenBLAS sgemm single-threaded on slices of C over the OpenMP threads (a bias as addmm
// adds it), ssyrk for syrk.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

#if defined(SB_HAVE_AVX512) || defined(SB_HAVE_AVX2)
// GCC 12's AVX-512 shuffle intrinsics start from an undefined vector, which -Wuninitialized
// reports (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace sb::cpu {
namespace {

// Register tile MR × NR (rows of C × columns of C) per SIMD level; KC: the k-block.
#if defined(SB_HAVE_AVX512)
constexpr int MR = 8, NR = 32;
#elif defined(SB_HAVE_AVX2)
constexpr int MR = 6, NR = 16;
#else
constexpr int MR = 4, NR = 8;
#endif
constexpr int KC = 256;
// Tiles of one parallel task: TI row panels × TJ column panels.
constexpr int TI = 8, TJ = 4;
// Transposing packs move kPackBlock values of k at a time.
constexpr int kPackBlock = 16;

// The micro-kernel: c (MR, NR) with leading dimension ldc; bp (kc, NR) packed; ap packed (kc, as)
// (as = MR, or NR when the A panel is a slice of a B panel: syrk), or with RowsA A's own rows in
// place (MR, as), as = lda: op(A)[r][p] = ap[r·as + p] — the same values (fp32), no copy. The row
// loops are unrolled so that the accumulators stay in registers.
// c[r][j] ← fma(a[r][p], bp[p][j], c[r][j]) for p ascending; starts from +0 unless load.
template <bool RowsA>
constexpr size_t a_index(int p, int r, int as) {
  return RowsA ? static_cast<size_t>(r) * as + p : static_cast<size_t>(p) * as + r;
}

#if defined(SB_HAVE_AVX512)
template <bool RowsA>
void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = load ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp + p * NR);
    const __m512 b1 = _mm512_loadu_ps(bp + p * NR + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 a = _mm512_set1_ps(ap[a_index<RowsA>(p, r, as)]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}
#elif defined(SB_HAVE_AVX2)
template <bool RowsA>
void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = load ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = load ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp + p * NR);
    const __m256 b1 = _mm256_loadu_ps(bp + p * NR + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 a = _mm256_broadcast_ss(ap + a_index<RowsA>(p, r, as));
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}
#else
template <bool RowsA>
void micro_kernel(int kc, const float* ap, int as, const float* bp, float* c, int ldc, bool load) {
  float acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
  for (int p = 0; p < kc; ++p)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] = det::fma_f32(ap[a_index<RowsA>(p, r, as)], bp[p * NR + j], acc[r][j]);
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = acc[r][j];
}
#endif

// op(A) row panel: rows i0 .. i0+MR-1 (zeros beyond m) for all k, packed (k, MR), rounded to P.
// Loops follow the storage order, so reads are contiguous for either transposition.
#if defined(SB_HAVE_AVX512)
// out[p·ldo + r] ← src[r·lda + p] for r < 8, p < 16: the transpose of an 8 × 16 block in
// registers (a copy: fp32 operands only). Packs A (ldo = MR) and, 8 columns at a time, B (NR).
void transpose_8x16(float* out, int ldo, const float* src, int lda) {
  static_assert(MR == 8 && NR % 8 == 0 && kPackBlock == 16, "transpose_8x16: 8 rows by 16 of k");
  __m512 t[8], u[8];
  for (int r = 0; r < 8; r += 2) {
    const __m512 x = _mm512_loadu_ps(src + static_cast<size_t>(r) * lda);
    const __m512 y = _mm512_loadu_ps(src + static_cast<size_t>(r + 1) * lda);
    t[r] = _mm512_unpacklo_ps(x, y);      // per 128-bit lane l: x[4l], y[4l], x[4l+1], y[4l+1]
    t[r + 1] = _mm512_unpackhi_ps(x, y);  // x[4l+2], y[4l+2], x[4l+3], y[4l+3]
  }
  for (int h = 0; h < 8; h += 4) {  // rows h..h+3: u[h/4·4 + c] lane l = column 4l + c
    u[h + 0] = _mm512_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[h + 1] = _mm512_shuffle_ps(t[h], t[h + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[h + 2] = _mm512_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[h + 3] = _mm512_shuffle_ps(t[h + 1], t[h + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {
    // Lanes [rows 0-3 of column c + 4l, rows 4-7 of it] for l = 0, 1, then l = 2, 3.
    const __m512 lo = _mm512_shuffle_f32x4(u[c], u[c + 4], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 hi = _mm512_shuffle_f32x4(u[c], u[c + 4], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 z0 = _mm512_shuffle_f32x4(lo, lo, _MM_SHUFFLE(3, 1, 2, 0));  // columns c, c + 4
    const __m512 z1 = _mm512_shuffle_f32x4(hi, hi, _MM_SHUFFLE(3, 1, 2, 0));  // c + 8, c + 12
    _mm256_storeu_ps(out + c * ldo, _mm512_castps512_ps256(z0));
    _mm256_storeu_pd(reinterpret_cast<double*>(out + (c + 4) * ldo), _mm512_extractf64x4_pd(_mm512_castps_pd(z0), 1));
    _mm256_storeu_ps(out + (c + 8) * ldo, _mm512_castps512_ps256(z1));
    _mm256_storeu_pd(reinterpret_cast<double*>(out + (c + 12) * ldo), _mm512_extractf64x4_pd(_mm512_castps_pd(z1), 1));
  }
}
#endif

template <Precision P>
void pack_a(float* ap, Trans ta, const float* a, int lda, int i0, int m, int k) {
  const int h = std::min(MR, m - i0);
  if (ta == Trans::no) {
    for (int p0 = 0; p0 < k; p0 += kPackBlock) {  // a transpose, in blocks that stay in L1
      const int p1 = std::min(k, p0 + kPackBlock);
#if defined(SB_HAVE_AVX512)
      if (P == Precision::fp32 && h == MR && p1 - p0 == kPackBlock) {
        transpose_8x16(ap + p0 * MR, MR, a + static_cast<size_t>(i0) * lda + p0, lda);
        continue;
      }
#endif
      for (int r = 0; r < h; ++r) {
        const float* src = a + static_cast<size_t>(i0 + r) * lda;
        for (int p = p0; p < p1; ++p) ap[p * MR + r] = ops::round_operand(src[p], P);
      }
    }
  } else {
    for (int p = 0; p < k; ++p) {
      const float* src = a + static_cast<size_t>(p) * lda + i0;
#pragma omp simd
      for (int r = 0; r < h; ++r) ap[p * MR + r] = ops::round_operand(src[r], P);
    }
  }
  for (int r = h; r < MR; ++r)
    for (int p = 0; p < k; ++p) ap[p * MR + r] = 0.0f;
}

// op(B) column panel: columns j0 .. j0+NR-1 (zeros beyond n) for all k, packed (k, NR), rounded.
template <Precision P>
void pack_b(float* bp, Trans tb, const float* b, int ldb, int j0, int n, int k) {
  const int w = std::min(NR, n - j0);
  if (tb == Trans::no) {
    for (int p = 0; p < k; ++p) {
      const float* src = b + static_cast<size_t>(p) * ldb + j0;
#pragma omp simd
      for (int j = 0; j < w; ++j) bp[p * NR + j] = ops::round_operand(src[j], P);
    }
  } else {
    for (int p0 = 0; p0 < k; p0 += kPackBlock) {  // a transpose, in blocks that stay in L1
      const int p1 = std::min(k, p0 + kPackBlock);
#if defined(SB_HAVE_AVX512)
      if (P == Precision::fp32 && w == NR && p1 - p0 == kPackBlock) {
        for (int j = 0; j < NR; j += 8)
          transpose_8x16(bp + p0 * NR + j, NR, b + static_cast<size_t>(j0 + j) * ldb + p0, ldb);
        continue;
      }
#endif
      for (int j = 0; j < w; ++j) {
        const float* src = b + static_cast<size_t>(j0 + j) * ldb;
        for (int p = p0; p < p1; ++p) bp[p * NR + j] = ops::round_operand(src[p], P);
      }
    }
  }
  for (int p = 0; p < k; ++p)
    for (int j = w; j < NR; ++j) bp[p * NR + j] = 0.0f;
}

// The packing functions for a precision (the rounding is hoisted out of the loops).
struct Packers {
  void (*a)(float*, Trans, const float*, int, int, int, int);
  void (*b)(float*, Trans, const float*, int, int, int, int);
};
Packers packers(Precision p) {
  switch (p) {
    case Precision::bf16: return {pack_a<Precision::bf16>, pack_b<Precision::bf16>};
    case Precision::fp16: return {pack_a<Precision::fp16>, pack_b<Precision::fp16>};
    case Precision::fp32: break;
  }
  return {pack_a<Precision::fp32>, pack_b<Precision::fp32>};
}

// One MR × NR tile of C at (i0, j0) over k-block [p0, p0+kc): continues each chain (load) unless
// this is the first block of a fresh product. Edge tiles go through a full-size local copy.
template <bool RowsA = false>
void run_tile(int kc, const float* ap, int as, const float* bp, float* c, int ldc, int i0, int j0, int m, int n,
              bool load) {
  const int h = std::min(MR, m - i0), w = std::min(NR, n - j0);
  float* corner = c + static_cast<size_t>(i0) * ldc + j0;
  if (h == MR && w == NR) {
    micro_kernel<RowsA>(kc, ap, as, bp, corner, ldc, load);
    return;
  }
  alignas(64) float tile[MR * NR] = {};
  if (load)
    for (int r = 0; r < h; ++r)
      for (int j = 0; j < w; ++j) tile[r * NR + j] = corner[static_cast<size_t>(r) * ldc + j];
  micro_kernel<RowsA>(kc, ap, as, bp, tile, NR, load);
  for (int r = 0; r < h; ++r)
    for (int j = 0; j < w; ++j) corner[static_cast<size_t>(r) * ldc + j] = tile[r * NR + j];
}

// The packed operands of one call and the C they multiply into: (m, n) with ldc. op(B) is np
// column panels (k, NR); op(A) is mp row panels (k, MR) — or, for syrk where op(A) = op(B)ᵀ,
// slices of the B panels read with stride NR (a_stride), when NR is a multiple of MR. a_rows: A
// itself (row-major op(A), fp32, lda): its whole row panels are read in place, only a last partial
// one is packed.
struct Packed {
  const float* a;
  const float* b;
  size_t a_panel, b_panel;  // floats per panel: k·MR, k·NR
  int a_stride;             // MR, or NR when A panels are B-panel slices
  int mp, np, m, n, k;
  float* c;
  int ldc;
  const float* a_rows = nullptr;
  int lda = 0;
  const float* a_at(int ip, int p0) const {
    if (a_stride == MR) return a + ip * a_panel + static_cast<size_t>(p0) * MR;
    const int row = ip * MR;
    return b + (row / NR) * b_panel + static_cast<size_t>(p0) * NR + row % NR;
  }
  // Tile (ip, jp) over the k-block [p0, p0 + kc).
  void tile(int ip, int jp, int p0, int kc, bool load) const {
    const float* bp = b + jp * b_panel + static_cast<size_t>(p0) * NR;
    if (in_place(ip))
      run_tile<true>(kc, a_rows + static_cast<size_t>(ip) * MR * lda + p0, lda, bp, c, ldc, ip * MR, jp * NR, m, n,
                     load);
    else run_tile(kc, a_at(ip, p0), a_stride, bp, c, ldc, ip * MR, jp * NR, m, n, load);
  }
  bool in_place(int ip) const { return a_rows != nullptr && (ip + 1) * MR <= m; }
};

// Every tile of C, in tasks of TI × TJ tiles (static: called inside the parallel region, whose
// end is the barrier). bias (n) or null: once a task's chains are complete, C[i][j] ←
// ops::linear_out(C[i][j], bias[j]) over its elements (the linear layer's output, in the same
// fork/join).
void all_tiles(const Packed& pk, bool accumulate, const float* bias) {
  const int ti = (pk.mp + TI - 1) / TI, tj = (pk.np + TJ - 1) / TJ;
#pragma omp for schedule(static) collapse(2) nowait
  for (int bj = 0; bj < tj; ++bj) {
    for (int bi = 0; bi < ti; ++bi) {
      const int ip1 = std::min(pk.mp, (bi + 1) * TI), jp1 = std::min(pk.np, (bj + 1) * TJ);
      for (int p0 = 0; p0 < pk.k; p0 += KC)
        for (int jp = bj * TJ; jp < jp1; ++jp)
          for (int ip = bi * TI; ip < ip1; ++ip) pk.tile(ip, jp, p0, std::min(KC, pk.k - p0), accumulate || p0 > 0);
      if (bias == nullptr) continue;
      const int i1 = std::min(pk.m, ip1 * MR), j0 = bj * TJ * NR, j1 = std::min(pk.n, jp1 * NR);
      for (int i = bi * TI * MR; i < i1; ++i) {
        float* row = pk.c + static_cast<size_t>(i) * pk.ldc;
#pragma omp simd
        for (int j = j0; j < j1; ++j) row[j] = ops::linear_out(row[j], bias[j]);
      }
    }
  }
}

// Row i of a symmetric C below the diagonal from its upper triangle: C[i][j] = C[j][i] for j < i.
void mirror_row(float* c, int ldc, int i) {
  for (int j = 0; j < i; ++j) c[static_cast<size_t>(i) * ldc + j] = c[static_cast<size_t>(j) * ldc + i];
}

// syrk: the tiles that reach the upper triangle j ≥ i (column panels from ip·MR / NR on), one
// task per row panel, longest first; then C[i][j] = C[j][i] below the diagonal — the same chain
// (Backend::syrk). Fresh chains (called inside the parallel region, whose end is the last barrier).
void upper_tiles_mirrored(const Packed& pk) {
#pragma omp for schedule(dynamic, 1)
  for (int ip = 0; ip < pk.mp; ++ip)
    for (int p0 = 0; p0 < pk.k; p0 += KC)
      for (int jp = ip * MR / NR; jp < pk.np; ++jp) pk.tile(ip, jp, p0, std::min(KC, pk.k - p0), p0 > 0);
#pragma omp for schedule(static) nowait
  for (int i = 1; i < pk.m; ++i) mirror_row(pk.c, pk.ldc, i);
}

// The k range [begin, end) of row panel ip's chains: all of k, or cut at the panel (k_to_row,
// k_from_row; cpu_backend_class.hpp).
std::pair<int, int> panel_k_range(GemmPart part, int ip, int k) {
  const int row0 = ip * MR;
  return {part == GemmPart::k_from_row ? std::min(row0, k - 1) : 0,
          part == GemmPart::k_to_row ? std::min(k, row0 + MR) : k};
}

// k_to_row, row panel ip after its tiles ran every row's chain to the panel's first row row0:
// each row i continues its own chains over k = row0 .. i and stops there. A chain must not run
// past its row: a masked term fma(+0, x, acc) turns an accumulated −0 into +0 (rule 1 ends the
// chain at i). fresh: the tiles ran no k (row0 = 0), the chains start at +0. Operands come from
// the packed panels (already rounded to the GEMM precision).
void finish_rows_to_diagonal(const Packed& pk, int ip, bool fresh) {
  const int row0 = ip * MR;
  for (int i = row0; i < std::min(row0 + MR, pk.m); ++i) {
    float* ci = pk.c + static_cast<size_t>(i) * pk.ldc;  // (n)
    if (fresh) std::fill(ci, ci + pk.n, 0.0f);
    for (int p = row0; p < std::min(i + 1, pk.k); ++p) {
      const float a_ip = pk.a_at(ip, p)[i - row0];
      for (int jp = 0; jp < pk.np; ++jp) {
        const float* bp = pk.b + jp * pk.b_panel + static_cast<size_t>(p) * NR;  // (NR)
        float* cj = ci + jp * NR;
        const int cols = std::min(NR, pk.n - jp * NR);
#pragma omp simd
        for (int j = 0; j < cols; ++j) cj[j] = det::fma_f32(a_ip, bp[j], cj[j]);
      }
    }
  }
}

// GemmPart::lower, k_to_row and k_from_row: one task per row panel (causal_panel), with the panel's
// own k range and column panels; fresh chains (called inside the parallel region, whose end is the
// barrier).
// k_to_row's tiles stop at the panel's first row; finish_rows_to_diagonal ends each row's chains
// at the row itself.
void causal_panel(const Packed& pk, GemmPart part, int ip) {
  auto [kb, ke] = panel_k_range(part, ip, pk.k);
  if (part == GemmPart::k_to_row) ke = std::min(ke, ip * MR);
  const int last_row = ip * MR + MR - 1;
  const int jp1 = part == GemmPart::lower ? std::min(pk.np, last_row / NR + 1) : pk.np;
  for (int p0 = kb; p0 < ke; p0 += KC)
    for (int jp = 0; jp < jp1; ++jp) pk.tile(ip, jp, p0, std::min(KC, ke - p0), p0 > kb);
  if (part == GemmPart::k_to_row) finish_rows_to_diagonal(pk, ip, ke == kb);
}

void causal_tiles(const Packed& pk, GemmPart part) {
#pragma omp for schedule(dynamic, 1) nowait
  for (int ip = 0; ip < pk.mp; ++ip) causal_panel(pk, part, ip);
}

// Long k into a C that stays in L2 (the head's dX = dlogits·W, k = the vocabulary; the layers' dX
// at GPT-2 width, k = 3C or 4C): packing all
// of op(A) and op(B) first writes and reads back (m + n)·k floats from memory. Here they are
// packed one k-block of kOuterBlock at a time into buffers that stay in cache, and every tile of
// C continues its chains block by block (load: C holds them in fp32 between blocks, as between the
// KC blocks of all_tiles). The same chains, the same bits; only the order of the memory traffic.
constexpr int kOuterBlock = 256;
constexpr size_t kOuterMaxC = size_t{1} << 20;       // bytes of C held in cache across the blocks
constexpr size_t kOuterMinPacked = size_t{4} << 20;  // bytes of packed operands that call for it

bool use_k_outer(int m, int n, int k) {
  const size_t c_bytes = static_cast<size_t>(m) * n * sizeof(float);
  const size_t packed_bytes = (static_cast<size_t>(m) + n) * k * sizeof(float);
  return k > 2 * kOuterBlock && c_bytes <= kOuterMaxC && packed_bytes >= kOuterMinPacked;
}

void gemm_k_outer(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                  int ldc, bool accumulate, Precision prec) {
  const int mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;
  const size_t a_panel = static_cast<size_t>(kOuterBlock) * MR, b_panel = static_cast<size_t>(kOuterBlock) * NR;
  thread_local std::vector<float> packed;
  if (packed.size() < a_panel * mp + b_panel * np) packed.resize(a_panel * mp + b_panel * np);
  float* const apack = packed.data();
  float* const bpack = packed.data() + a_panel * mp;
  const Packers pack = packers(prec);
  const int tiles = mp * np;
#pragma omp parallel
  for (int p0 = 0; p0 < k; p0 += kOuterBlock) {
    const int kb = std::min(kOuterBlock, k - p0);
    const float* a_p0 = a + static_cast<size_t>(p0) * (ta == Trans::no ? 1 : lda);
    const float* b_p0 = b + static_cast<size_t>(p0) * (tb == Trans::no ? ldb : 1);
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < mp; ++ip) pack.a(apack + ip * a_panel, ta, a_p0, lda, ip * MR, m, kb);
#pragma omp for schedule(static)
    for (int jp = 0; jp < np; ++jp) pack.b(bpack + jp * b_panel, tb, b_p0, ldb, jp * NR, n, kb);
      // Column panel outer (its B block stays in L1 across the row panels); the barrier at the end
      // keeps the buffers until every tile has read them.
#pragma omp for schedule(static)
    for (int t = 0; t < tiles; ++t) {
      const int jp = t / mp, ip = t % mp;
      run_tile(kb, apack + ip * a_panel, MR, bpack + jp * b_panel, c, ldc, ip * MR, jp * NR, m, n,
               accumulate || p0 > 0);
    }
  }
}

// One operand far larger than the other (the head's logits = x·Wᵀ, n = the vocabulary; its
// dW = dlogitsᵀ·x, m = the vocabulary; the layers' forward at GPT-2 width): the small one is packed whole (it stays in
// cache), the large one a block of kStreamPanels panels at a time into the thread's own buffer just before that block's
// tiles, instead of all of it first out to memory and back. Each tile's chains are all_tiles' (k ascending, continued
// across the KC blocks): the same bits.
constexpr int kStreamPanels = 8;
constexpr size_t kStreamMaxSmall = size_t{1} << 20;  // bytes of the packed operand held in cache
constexpr size_t kStreamMinLarge = size_t{4} << 20;  // bytes of the packed operand that call for it

// 'a' or 'b': the operand to stream; 0: neither.
char stream_side(int m, int n, int k) {
  const size_t a_bytes = static_cast<size_t>(m) * k * sizeof(float);
  const size_t b_bytes = static_cast<size_t>(n) * k * sizeof(float);
  if (a_bytes <= kStreamMaxSmall && b_bytes >= kStreamMinLarge) return 'b';
  if (b_bytes <= kStreamMaxSmall && a_bytes >= kStreamMinLarge) return 'a';
  return 0;
}

void gemm_streamed(char side, Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                   float* c, int ldc, bool accumulate, Precision prec) {
  const int mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;
  const size_t a_panel = static_cast<size_t>(k) * MR, b_panel = static_cast<size_t>(k) * NR;
  const bool on_a = side == 'a';
  const Packers pack = packers(prec);
  const auto pack_panel = [&](float* dst, int panel) {
    if (on_a) pack.a(dst, ta, a, lda, panel * MR, m, k);
    else pack.b(dst, tb, b, ldb, panel * NR, n, k);
  };
  const int whole = on_a ? np : mp, streamed = on_a ? mp : np;
  const size_t whole_panel = on_a ? b_panel : a_panel, streamed_panel = on_a ? a_panel : b_panel;
  thread_local std::vector<float> whole_packed;
  if (whole_packed.size() < whole_panel * whole) whole_packed.resize(whole_panel * whole);
  float* const wpack = whole_packed.data();
  const int blocks = (streamed + kStreamPanels - 1) / kStreamPanels;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int q = 0; q < whole; ++q) {
      if (on_a) pack.b(wpack + q * whole_panel, tb, b, ldb, q * NR, n, k);
      else pack.a(wpack + q * whole_panel, ta, a, lda, q * MR, m, k);
    }
    thread_local std::vector<float> block_packed;  // this thread's block of panels
    if (block_packed.size() < streamed_panel * kStreamPanels) block_packed.resize(streamed_panel * kStreamPanels);
    float* const spack = block_packed.data();
#pragma omp for schedule(static) nowait
    for (int blk = 0; blk < blocks; ++blk) {
      const int q0 = blk * kStreamPanels, q1 = std::min(streamed, q0 + kStreamPanels);
      for (int q = q0; q < q1; ++q) pack_panel(spack + (q - q0) * streamed_panel, q);
      const int ip0 = on_a ? q0 : 0, ip1 = on_a ? q1 : mp, jp0 = on_a ? 0 : q0, jp1 = on_a ? np : q1;
      for (int p0 = 0; p0 < k; p0 += KC)
        for (int jp = jp0; jp < jp1; ++jp)
          for (int ip = ip0; ip < ip1; ++ip) {
            const float* ap = on_a ? spack + (ip - ip0) * a_panel : wpack + ip * a_panel;
            const float* bp = on_a ? wpack + jp * b_panel : spack + (jp - jp0) * b_panel;
            run_tile(std::min(KC, k - p0), ap + static_cast<size_t>(p0) * MR, MR, bp + static_cast<size_t>(p0) * NR, c,
                     ldc, ip * MR, jp * NR, m, n, accumulate || p0 > 0);
          }
    }
  }
}

// part: full (accumulate or not), or one of the structured products (fresh chains; syrk: m = n,
// op(A) = op(B)ᵀ). serial: on the calling thread only. bias (n), full only: C ← C + bias per row
// after the chains (all_tiles).
void gemm_canonical(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                    int ldc, bool accumulate, Precision prec, GemmPart part = GemmPart::full, bool serial = false,
                    const float* bias = nullptr) {
  const int mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;
  if (k == 0) {
    if (!accumulate)
      for (int i = 0; i < m; ++i)
        std::fill(c + static_cast<size_t>(i) * ldc, c + static_cast<size_t>(i) * ldc + n, 0.0f);
    return;
  }
  if (part == GemmPart::full && bias == nullptr && !serial && use_k_outer(m, n, k))
    return gemm_k_outer(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, prec);
  if (part == GemmPart::full && bias == nullptr && !serial) {
    if (const char side = stream_side(m, n, k))
      return gemm_streamed(side, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, prec);
  }
  const bool pack_a = !(part == GemmPart::syrk && NR % MR == 0);  // else slices of the B panels
  const size_t a_panel = static_cast<size_t>(k) * MR, b_panel = static_cast<size_t>(k) * NR;
  const size_t a_floats = pack_a ? a_panel * mp : 0;
  // Packed operands, reused across calls from the same thread: (mp, k, MR) then (np, k, NR).
  thread_local std::vector<float> packed;
  if (packed.size() < a_floats + b_panel * np) packed.resize(a_floats + b_panel * np);
  float* const apack = packed.data();
  float* const bpack = packed.data() + a_floats;
  // fp32 row-major op(A) of a full product: the tiles read A's rows in place.
  const bool a_rows = part == GemmPart::full && prec == Precision::fp32 && ta == Trans::no;
  const Packed pk{apack, bpack, a_panel, b_panel, pack_a ? MR : NR, mp, np, m, n, k, c, ldc, a_rows ? a : nullptr, lda};
  const Packers pack = packers(prec);
  const auto pack_a_panel = [&](int ip) {  // the panel's k range only: op(A) columns [kb, ke)
    const auto [kb, ke] = panel_k_range(part, ip, k);
    const float* a_kb = a + static_cast<size_t>(kb) * (ta == Trans::no ? 1 : lda);
    pack.a(apack + ip * a_panel + static_cast<size_t>(kb) * MR, ta, a_kb, lda, ip * MR, m, ke - kb);
  };
  const auto pack_b_panel = [&](int jp) { pack.b(bpack + jp * b_panel, tb, b, ldb, jp * NR, n, k); };
  if (serial) {  // the causal parts on the calling thread, with no team of its own: plain loops
    SB_CHECK(part != GemmPart::full && part != GemmPart::syrk, "a serial canonical GEMM takes a causal part");
    for (int ip = 0; ip < mp; ++ip) pack_a_panel(ip);
    for (int jp = 0; jp < np; ++jp) pack_b_panel(jp);
    for (int ip = 0; ip < mp; ++ip) causal_panel(pk, part, ip);
    return;
  }
#pragma omp parallel
  {
    if (pack_a) {
#pragma omp for schedule(static) nowait
      for (int ip = 0; ip < mp; ++ip)
        if (!pk.in_place(ip)) pack_a_panel(ip);
    }
#pragma omp for schedule(static)
    for (int jp = 0; jp < np; ++jp) pack_b_panel(jp);
    if (part == GemmPart::full) all_tiles(pk, accumulate, bias);
    else if (part == GemmPart::syrk) upper_tiles_mirrored(pk);
    else causal_tiles(pk, part);
  }
}

// A bf16/fp16 operand for OpenBLAS: the first `size` floats of `x` rounded into `copy` (fp32: x).
const float* vendor_operand(const float* x, size_t size, Precision prec, std::vector<float>& copy) {
  if (prec == Precision::fp32) return x;
  copy.resize(size);
  for (size_t i = 0; i < size; ++i) copy[i] = ops::round_operand(x[i], prec);
  return copy.data();
}

// Vendor: OpenBLAS sgemm, single-threaded, on slices of C over samebits' OpenMP threads (rows
// when m >= n, else columns; 16-aligned slices). OpenBLAS's own thread pool stays idle, so it never
// competes with the OpenMP threads for the cores. Called inside a parallel region it runs whole on
// the calling thread. bf16/fp16 operands are rounded copies. Vendor mode promises no bits; OpenBLAS
// never splits k, so every output is the same chain as the unsliced call's. With a bias (the
// linear layer's forward) each slice of C is first filled with the bias rows and the product added
// with β = 1, as PyTorch's addmm does: no β = 0 pass over C and no bias pass after it.
void gemm_vendor(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
                 int ldc, bool accumulate, Precision prec, const float* bias = nullptr) {
  std::vector<float> ar, br;
  a = vendor_operand(a, static_cast<size_t>(ta == Trans::no ? m : k) * lda, prec, ar);
  b = vendor_operand(b, static_cast<size_t>(tb == Trans::no ? k : n) * ldb, prec, br);
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  const auto sgemm = [&](int m0, int m1, int n0, int n1) {
    if (m1 <= m0 || n1 <= n0) return;
    const float* as = a + static_cast<size_t>(m0) * (ta == Trans::no ? lda : 1);
    const float* bs = b + static_cast<size_t>(n0) * (tb == Trans::no ? 1 : ldb);
    if (bias != nullptr)
      for (int i = m0; i < m1; ++i)
        std::memcpy(c + static_cast<size_t>(i) * ldc + n0, bias + n0, sizeof(float) * (n1 - n0));
    cblas_sgemm(CblasRowMajor, ta == Trans::no ? CblasNoTrans : CblasTrans, tb == Trans::no ? CblasNoTrans : CblasTrans,
                m1 - m0, n1 - n0, k, 1.0f, as, lda, bs, ldb, accumulate || bias != nullptr ? 1.0f : 0.0f,
                c + static_cast<size_t>(m0) * ldc + n0, ldc);
  };
  constexpr int kSlice = 16;  // rows or columns per slice: a multiple of OpenBLAS's register tiles
  const bool rows = m >= n;
  const int slices = ((rows ? m : n) + kSlice - 1) / kSlice;
  const int threads = omp_in_parallel() ? 1 : std::min(omp_get_max_threads(), slices);
  if (threads <= 1 || 2.0 * m * n * k < 4.0e6) {  // below ~4 MFLOP one call beats a fork
    sgemm(0, m, 0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int first = std::min(rows ? m : n, slices * t / nt * kSlice);
    const int last = std::min(rows ? m : n, slices * (t + 1) / nt * kSlice);
    if (rows) sgemm(first, last, 0, n);
    else sgemm(0, m, first, last);
  }
}

}  // namespace

void CpuBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc, bool accumulate, Precision precision) {
  SB_CHECK(m >= 0 && n >= 0 && k >= 0, "gemm sizes must be non-negative, got m=", m, " n=", n, " k=", k);
  if (m == 0 || n == 0) return;
  if (numerics().gemm == GemmMode::vendor) gemm_vendor(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
  else gemm_canonical(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
}

void CpuBackend::syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) {
  SB_CHECK(n >= 0 && k >= 0, "syrk sizes must be non-negative, got n=", n, " k=", k);
  const Trans tb = ta == Trans::no ? Trans::yes : Trans::no;
  if (k == 0 || n == 0) {
    gemm(ta, tb, n, n, k, a, lda, a, lda, c, ldc, false, precision);
  } else if (numerics().gemm == GemmMode::vendor) {
    // OpenBLAS ssyrk's upper triangle, mirrored to the lower one: on the calling thread inside a
    // parallel region (Muon runs its matrices on the OpenMP threads), else on OpenBLAS's threads
    // (they split C's columns, never k: the same chains).
    std::vector<float> ar;
    a = vendor_operand(a, static_cast<size_t>(ta == Trans::no ? n : k) * lda, precision, ar);
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
    cblas_ssyrk(CblasRowMajor, CblasUpper, ta == Trans::no ? CblasNoTrans : CblasTrans, n, k, 1.0f, a, lda, 0.0f, c,
                ldc);
    for (int i = 1; i < n; ++i) mirror_row(c, ldc, i);
  } else {
    gemm_canonical(ta, tb, n, n, k, a, lda, a, lda, c, ldc, false, precision, GemmPart::syrk);
  }
}

void canonical_gemm_serial(GemmPart part, Trans ta, Trans tb, int m, int n, int k, const float* a, int lda,
                           const float* b, int ldb, float* c, int ldc) {
  SB_CHECK(m >= 0 && n >= 0 && k >= 1, "canonical_gemm_serial sizes: expected m, n >= 0 and k >= 1, got m=", m,
           " n=", n, " k=", k);
  if (m == 0 || n == 0) return;
  gemm_canonical(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, Precision::fp32, part, true);
}

bool CpuBackend::gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  if (N <= 0 || OC <= 0 || C <= 0) return false;
  if (numerics().gemm == GemmMode::vendor) {  // addmm: the bias rows, then the product with β = 1
    gemm_vendor(Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision, bias);
    return true;
  }
  // The bias in the GEMM's own fork/join (all_tiles), after each output's chain.
  gemm_canonical(Trans::no, Trans::yes, N, OC, C, inp, C, w, C, out, OC, false, numerics().precision, GemmPart::full,
                 false, bias);
  return true;
}

void CpuBackend::bias_forward(float* out, const float* bias, int N, int OC) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < N; ++n) {
    float* row = out + static_cast<size_t>(n) * OC;
#pragma omp simd
    for (int o = 0; o < OC; ++o) row[o] = ops::linear_out(row[o], bias[o]);
  }
}

void CpuBackend::bias_backward(float* dbias, const float* dout, int N, int OC) {
  token_reduce(dbias, N, OC, numerics().reduce, [&](float acc, int n, int o) {
    return ops::token_sum_step(acc, dout[static_cast<size_t>(n) * OC + o]);
  });
}

}  // namespace sb::cpu
