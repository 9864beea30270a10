// The exact GEMM's digit products through oneDNN's int8 matmul (u8 × s8 → s32): both operands are
// cut into s int8 digits of 6 bits (ops::exact::int8_digits) in plain rows of k bytes, A's digits
// + kOffset (the matmul multiplies unsigned by signed bytes) and B's signed digits, lines in blocks stacked by slice,
// so that one matmul (s·mw × k)·(k × s·nw) gives every slice pair's dot of a block of C. Each pair's dot is an exact
// integer, so whichever kernel, blocking or thread count oneDNN picks (AMX-INT8 tiles, VNNI, AVX2 pair products), C has
// the bits of samebits' own kernels.
//
// No oneDNN kernel can saturate or wrap: a byte product is (digit + 64)·b with digit + 64 in
// [1, 127] and |b| ≤ 63, so |product| ≤ 8 001 and a pair sum (AVX2's vpmaddubsw, int16) ≤ 16 002 <
// 2^15; k is cut into chunks of at most kChunk = 2^18, so that every partial sum in any order stays
// below kChunk·8 001 < 2^31; chunks are added in int64.
#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <string>
#include <vector>

#include "exact_gemm.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::exact {
namespace {

constexpr int kOffset = 64;
constexpr int kChunk = 1 << 18;
static_assert(int64_t{kChunk} * 127 * 63 < (int64_t{1} << 31), "a chunk's partial sums fit int32");
constexpr int kBlock = 512;  // lines of A and of B per block of C

// An operand's lines in blocks of kBlock: block b holds, for each slice t, its width(b) lines as
// rows of k bytes — byte p of slice t of line i at start(b) + (t·width(b) + i % kBlock)·k + p.
struct Blocks {
  int lines, s, k;
  int count() const { return (lines + kBlock - 1) / kBlock; }
  int width(int b) const { return std::min(kBlock, lines - b * kBlock); }
  size_t start(int b) const { return static_cast<size_t>(b) * s * kBlock * k; }
  size_t slice(int b) const { return static_cast<size_t>(width(b)) * k; }
  size_t row(int i) const { return start(i / kBlock) + static_cast<size_t>(i % kBlock) * k; }
};

// One operand sliced: its bytes, each line's scale exponent and non-finite flag and (B) each
// line's digit sums per slice, (lines, s).
template <class Byte>
struct SlicedLines {
  std::vector<Byte> bytes;
  std::vector<int> exp;
  std::vector<uint8_t> bad;
  std::vector<int32_t> sums;

  void pack(const Line& line, const Blocks& bl, int offset, bool with_sums) {
    bytes.resize(bl.start(bl.count()));
    exp.resize(bl.lines);
    bad.resize(bl.lines);
    sums.resize(with_sums ? static_cast<size_t>(bl.lines) * bl.s : 0);
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int i = 0; i < bl.lines; ++i) {
      Byte* row = bytes.data() + bl.row(i);
      const size_t slice = bl.slice(i / kBlock);
      line_scale(line, i, bl.k, &exp[i], &bad[i]);
      line_digits(
          line, i, bl.k, exp[i], bl.s, ops::exact::int8_digits(bl.s), slice, offset,
          [](int p) { return static_cast<size_t>(p); }, row);
      for (int t = 0; with_sums && t < bl.s; ++t) {
        int32_t sum = 0;  // |sum| ≤ k·63
        for (int p = 0; p < bl.k; ++p) sum += row[t * slice + p];
        sums[static_cast<size_t>(i) * bl.s + t] = sum;
      }
    }
  }
};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// raw (M, N) ← a (M, K; row stride lda) · b (K, N; column stride ldb), int32; amx: refuse any
// kernel oneDNN picks but an AMX-INT8 one.
void int8_matmul(int M, int N, int K, const uint8_t* a, int lda, const int8_t* b, int ldb, int32_t* raw, bool amx) {
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc ad({M, K}, dt::u8, {lda, 1}), bd({K, N}, dt::s8, {1, ldb}), cd({M, N}, dt::s32, {N, 1});
  const dnnl::engine& engine = cpu_engine();
  std::string impl;
  try {
#if DNNL_VERSION_MAJOR >= 3
    const dnnl::matmul::primitive_desc pd(engine, ad, bd, cd);
#else
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), engine);
#endif
    impl = pd.impl_info_str();
    if (!amx || impl.find("amx") != std::string::npos) {
      thread_local dnnl::stream stream(engine);
      dnnl::memory am(ad, engine, const_cast<uint8_t*>(a)), bm(bd, engine, const_cast<int8_t*>(b)), cm(cd, engine, raw);
      dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      stream.wait();
    }
  } catch (const dnnl::error& e) {
    SB_FAIL("oneDNN's int8 matmul ", M, "x", N, "x", K, " of the exact GEMM failed: ", e.what());
  }
  SB_CHECK(!amx || impl.find("amx") != std::string::npos, "SAMEBITS_ISA=amx but oneDNN picked '", impl,
           "' for the int8 matmul ", M, "x", N, "x", K, "; use SAMEBITS_ISA=onednn or unset SAMEBITS_ISA");
}

// The C block of A's block ib and B's block jb from raw (s·mw, s·nw): pair (t, u)'s dot of (r, q) is
// raw[t·mw + r][u·nw + q] − kOffset·Σ_p b, summed exactly per pair weight, then one rounding.
template <class Raw>
void store_block(const ops::GemmProblem& g, const Raw* raw, const SlicedLines<uint8_t>& A, const SlicedLines<int8_t>& B,
                 int s, int i0, int mw, int j0, int nw, const float* bias) {
  const bool narrow = ops::exact::narrow_dot(g.k, s);
  const size_t N = static_cast<size_t>(s) * nw;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
  for (int r = 0; r < mw; ++r) {
    const int i = i0 + r;
    for (int q = 0; q < nw; ++q) {
      const int j = j0 + q;
      int64_t w[2 * 4 - 1] = {};
      for (int t = 0; t < s; ++t)
        for (int u = 0; u < s; ++u)
          w[t + u] += static_cast<int64_t>(raw[(static_cast<size_t>(t) * mw + r) * N + u * nw + q]) -
                      int64_t{kOffset} * B.sums[static_cast<size_t>(j) * s + u];
      store_element(g, i, j, ops::exact::slice_dot(w, 1, ops::exact::int8_digits(s), narrow), A.exp[i], B.exp[j], s,
                    A.bad[i] != 0 || B.bad[j] != 0, bias);
    }
  }
}

}  // namespace

void gemm_exact_onednn(const ops::GemmProblem& g, bool amx) {
  const float* const bias = g.bias;
  const int s = ops::exact::slices(g.precision);
  const Blocks ab{g.m, s, g.k}, bb{g.n, s, g.k};
  thread_local SlicedLines<uint8_t> A;
  thread_local SlicedLines<int8_t> B;
  thread_local std::vector<int32_t> raw;
  thread_local std::vector<int64_t> wide;
  A.pack(a_line(g), ab, kOffset, false);
  B.pack(b_line(g), bb, 0, true);
  for (int ib = 0; ib < ab.count(); ++ib)
    for (int jb = 0; jb < bb.count(); ++jb) {
      const int mw = ab.width(ib), nw = bb.width(jb), M = s * mw, N = s * nw;
      raw.resize(static_cast<size_t>(M) * N);
      const uint8_t* a = A.bytes.data() + ab.start(ib);
      const int8_t* b = B.bytes.data() + bb.start(jb);
      if (g.k <= kChunk) {
        int8_matmul(M, N, g.k, a, g.k, b, g.k, raw.data(), amx);
        store_block(g, raw.data(), A, B, s, ib * kBlock, mw, jb * kBlock, nw, bias);
        continue;
      }
      wide.assign(raw.size(), 0);
      for (int p0 = 0; p0 < g.k; p0 += kChunk) {
        int8_matmul(M, N, std::min(kChunk, g.k - p0), a + p0, g.k, b + p0, g.k, raw.data(), amx);
        for (size_t e = 0; e < raw.size(); ++e) wide[e] += raw[e];
      }
      store_block(g, wide.data(), A, B, s, ib * kBlock, mw, jb * kBlock, nw, bias);
    }
}

}  // namespace sb::cpu::exact
