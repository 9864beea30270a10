// The exact GEMM on the CPU (numerics.gemm = exact; the definition: ops/exact_gemm.hpp and
// docs/CONTRACT.md). Internal to core/cpu: the packed digit layout every kernel reads, the kernels
// per instruction set, the driver. Every kernel returns exact integer digit dots, so every path,
// tile order and thread count gives the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gemm_tile.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu::exact {

// samebits' kernels cut the 6s-bit integer operands into s/2 int16 digits of 12 bits
// (ops::exact::int16_digits): |digit| ≤ 4095, a digit product at most 4095² = 16 769 025 < 2^24.
// The tile of every kernel: MR rows of C × NR columns; k packed in pairs, a digit pair being the
// int32 lane vpdpwssd / vpmaddwd multiplies and sums (element 2·pp in the low int16, 2·pp + 1 in
// the high one), zero digits beyond k.
constexpr int MR = 8, NR = 32, kPair = 2;
// A kernel sums at most kFlushPairs pairs (2·kFlushPairs products) of k in an int32 lane, then adds
// the lane to its int64 total: |Σ| ≤ 128·4095² = 2 146 435 200 < 2^31, so the int32 sum is exact
// whatever the order of its wrapping additions, and each int64 total (≤ k·2·4095² < 2^45 for
// k ≤ ops::exact::kMaxK) is exact.
constexpr int kFlushPairs = 64;
static_assert(int64_t{2 * kFlushPairs} * 4095 * 4095 < (int64_t{1} << 31), "an int32 lane's sum is exact");
constexpr ops::exact::Digits kernel_digits(int s) { return ops::exact::int16_digits(s); }

// d (MR, NR) += Σ_p a[r][p]·b[p][j] over kp pairs of k, exact in int64. a: (kp, MR) digit pairs of
// MR rows; b: (kp, NR) digit pairs of NR columns.
using Kernel = void (*)(int kp, const int32_t* a, const int32_t* b, int64_t* d);
void kernel_scalar(int kp, const int32_t* a, const int32_t* b, int64_t* d);
void kernel_avx2(int kp, const int32_t* a, const int32_t* b, int64_t* d);
void kernel_avx512(int kp, const int32_t* a, const int32_t* b, int64_t* d);

// The path that computes the digit products: samebits' kernels per instruction set, or oneDNN's
// int8 matmul (onednn: whatever kernel oneDNN picks; amx: oneDNN on AMX-INT8 only). SAMEBITS_ISA
// when set (an error naming the variable when this CPU or build lacks it), else the fastest this
// CPU and build have (exact_isa.cpp).
enum class Isa : uint8_t { scalar, avx2, avx512, onednn, amx };
Isa active_isa();
// The instruction set of samebits' own kernel and slicing for a path: isa itself, or for oneDNN's
// paths (a product that needs samebits' kernels: the k-split) the best this CPU has.
Isa own_isa(Isa isa);
Kernel kernel(Isa isa);

// A k-long line of an operand (a row of op(A) or a column of op(B)): element (i, p) is op(A)[i][p]
// or op(B)[p][i], rounded to the GEMM precision.
struct Line {
  const float* base;
  size_t step_p, step_i;  // strides along k and along the rows/columns
  Precision prec;
  float at(int i, int p) const { return ops::round_operand(base[p * step_p + i * step_i], prec); }
};
Line a_line(const ops::GemmProblem& g);
Line b_line(const ops::GemmProblem& g);
// Scale exponent and non-finite flag (1 where a NaN or an Inf was seen) of line i over k.
void line_scale(const Line& line, int i, int k, int* exp, uint8_t* bad);
// Digit t (of dg) of element p of line i (scale exponent E) plus `offset` into
// out[t·slice + place(p)].
template <class Digit, class Place>
void line_digits(const Line& line, int i, int k, int E, int s, ops::exact::Digits dg, size_t slice, int offset,
                 Place place, Digit* out) {
  for (int p = 0; p < k; ++p) {
    const float x = line.at(i, p);
    const int32_t X = ops::exact::is_finite(x) ? ops::exact::integer_operand(x, E, s) : 0;
    const size_t at = place(p);
    for (int t = 0; t < dg.count; ++t) out[t * slice + at] = static_cast<Digit>(ops::exact::digit(X, t, dg) + offset);
  }
}

// The per-element work of slicing a panel of lines i0 … i0 + w − 1 (w ≤ lanes), compiled per
// instruction set (exact_panel.cpp). codes: code[c] ← line i0 + c's scale code over k
// (ops::exact::line_code). digits: the digit pairs of those lines under scale exponents exp (w) into
// out (count, kp, lanes): lane c of pair pp of digit t at out[t·slice + pp·lanes + c].
struct PanelWork {
  void (*codes)(const Line& line, int i0, int w, int k, int32_t* code);
  void (*digits)(const Line& line, int i0, int w, int lanes, int k, const int* exp, size_t slice, int32_t* out);
};
PanelWork panel_work(Isa isa, Precision prec);

// Row r of a tile of C whose integer dots fit int64 (ops::exact::narrow_dot), compiled per
// instruction set (exact_round.cpp): c[q] ← ops::exact::exact_element(S_q, E, F[q], …) [+ c[q]]
// [+ bias[q]] for q < cols, S_q the dot of the sums by digit-pair weight w[v·MR·NR + q] (w: the
// tile's sums from element r·NR); row_bad, col_bad (cols): lines holding a NaN or an Inf.
using RoundRow = void (*)(const int64_t* w, int cols, int E, const int* F, bool row_bad, const uint8_t* col_bad,
                          bool accumulate, const float* bias, float* c);
RoundRow round_row(Isa isa, Precision prec);

// C[i][j] ← ops::exact::exact_element(S, …) [+ C[i][j]], then ops::linear_out with bias[j] when
// bias is given.
inline void store_element(const ops::GemmProblem& g, int i, int j, __int128 S, int E, int F, int s, bool bad,
                          const float* bias) {
  float* c = g.c + static_cast<size_t>(i) * g.ldc + j;
  const float out = ops::exact::exact_output(S, E, F, s, bad, g.accumulate, *c);
  *c = bias != nullptr ? ops::linear_out(out, bias[j]) : out;
}

// The operands of one product cut into digits (exact_pack.cpp): the digits of op(A)'s row panels
// and op(B)'s column panels; each row's and column's scale code (ops::exact::line_code), and from
// it the scale exponent and whether the line holds a NaN or an Inf.
struct Sliced {
  int s = 0, mp = 0, np = 0, kp = 0;
  ops::exact::Digits dg{};
  PanelWork work{};
  RoundRow round{};
  std::vector<int32_t> a;                   // (mp, dg.count, kp, MR) digit pairs
  std::vector<int32_t> b;                   // (np, dg.count, kp, NR) digit pairs
  std::vector<int32_t> row_code, col_code;  // (mp·MR), (np·NR)
  std::vector<int> row_exp, col_exp;        // (mp·MR), (np·NR)
  std::vector<uint8_t> row_bad, col_bad;    // (mp·MR), (np·NR): 1 where a NaN or an Inf was seen
  size_t a_slice() const { return static_cast<size_t>(kp) * MR; }
  size_t b_slice() const { return static_cast<size_t>(kp) * NR; }
  int32_t* a_at(int ip, int t) { return a.data() + (static_cast<size_t>(ip) * dg.count + t) * a_slice(); }
  int32_t* b_at(int jp, int u) { return b.data() + (static_cast<size_t>(jp) * dg.count + u) * b_slice(); }
  const int32_t* a_at(int ip, int t) const { return a.data() + (static_cast<size_t>(ip) * dg.count + t) * a_slice(); }
  const int32_t* b_at(int jp, int u) const { return b.data() + (static_cast<size_t>(jp) * dg.count + u) * b_slice(); }
  void resize(const ops::GemmProblem& g, Isa isa);        // for g's shapes, slicing with isa's panel work
  void scale_a_panel(const ops::GemmProblem& g, int ip);  // codes of rows ip·MR … of op(A) over g.k
  void scale_b_panel(const ops::GemmProblem& g, int jp);  // codes of columns jp·NR … of op(B)
  void pack_a_panel(const ops::GemmProblem& g, int ip);   // their exponents, flags and digits
  void pack_b_panel(const ops::GemmProblem& g, int jp);

 private:
  void settle(int line, bool row);  // exponent and flag of a row or column from its code
};

// C ← op(A)·op(B) [+ C] by the exact definition, then C ← ops::linear_out(C, bias) when g.bias (n)
// is given. Runs on its own OpenMP team, or on the calling thread inside a parallel region.
void gemm_exact(const ops::GemmProblem& g);
// The same through oneDNN's int8 matmul (exact_onednn.cpp; built with oneDNN only); amx: refuse
// any oneDNN kernel but AMX-INT8.
void gemm_exact_onednn(const ops::GemmProblem& g, bool amx);

// The same product with k split across g.group (ops::GemmProblem::split_over): g holds this rank's
// k-slice of op(A) and op(B), g.k_total the whole k; C ← the unsplit product (+ bias).
void gemm_exact_split(const ops::GemmProblem& g);

}  // namespace sb::cpu::exact
