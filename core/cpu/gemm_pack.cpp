// Packing for the canonical GEMM: op(A) row panels (k, MR) and op(B) column panels (k, NR), each
// operand rounded to the GEMM precision on the way (ops::round_operand), zeros beyond the edges. A
// copy and a rounding per element: no arithmetic across elements, so nothing here orders a sum.
#include "gemm_simd.hpp"
#include "gemm_tile.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu::gemm {
namespace {

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

// Loops follow the storage order, so reads are contiguous for either transposition.
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

}  // namespace

Packers packers(Precision p) {
  switch (p) {
    case Precision::bf16: return {pack_a<Precision::bf16>, pack_b<Precision::bf16>};
    case Precision::fp16: return {pack_a<Precision::fp16>, pack_b<Precision::fp16>};
    case Precision::fp32: break;
  }
  return {pack_a<Precision::fp32>, pack_b<Precision::fp32>};
}

}  // namespace sb::cpu::gemm
