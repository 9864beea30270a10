// The exact GEMM on the CPU (numerics.gemm = exact; the definition: ops/exact_gemm.hpp and
// docs/CONTRACT.md). Internal to core/cpu: the packed slice layout every kernel reads, the kernels
// per instruction set, the driver. Every kernel returns exact int32 slice dots, so every path,
// tile order and thread count gives the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gemm_tile.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"

namespace sb::cpu::exact {

// The tile of every kernel: MR rows of C × NR columns; k packed in quads (the 4 bytes a VNNI lane
// multiplies), zero digits beyond k.
constexpr int MR = 8, NR = 32, kQuad = 4;
// A's digits are stored as unsigned bytes digit + kOffset (VNNI multiplies unsigned by signed);
// a kernel subtracts kOffset·Σ_p b (b_sum) again, in wrapping int32 arithmetic: the true dot fits
// int32 (k ≤ ops::exact::kMaxK), so the wrapped result is exact.
constexpr int kOffset = 64;

// d (MR, NR) ← [d +] Σ_p digitA[r][p]·digitB[p][j] over kq quads (load: continue d, in wrapping
// int32 arithmetic). a: (kq, MR, 4) bytes digit + kOffset; b: (kq, NR, 4) signed digits; b_sum:
// (NR) Σ_p of b's digits.
using Kernel = void (*)(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load);
void kernel_scalar(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load);
void kernel_avx2(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load);
void kernel_avx512(int kq, const uint8_t* a, const int8_t* b, const int32_t* b_sum, int32_t* d, bool load);

// The path that computes the slice products: samebits' kernels per instruction set, or oneDNN's
// int8 matmul (onednn: whatever kernel oneDNN picks; amx: oneDNN on AMX-INT8 only). SAMEBITS_ISA
// when set (an error naming the variable when this CPU or build lacks it), else the fastest this
// CPU and build have (exact_isa.cpp).
enum class Isa : uint8_t { scalar, avx2, avx512, onednn, amx };
Isa active_isa();
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
// Digit t of element p of line i (scale exponent E) plus `offset` into out[t·slice + place(p)].
template <class Byte, class Place>
void line_digits(const Line& line, int i, int k, int E, int s, size_t slice, int offset, Place place, Byte* out) {
  for (int p = 0; p < k; ++p) {
    const float x = line.at(i, p);
    const int64_t X = ops::exact::is_finite(x) ? ops::exact::integer_operand(x, E, s) : 0;
    const size_t at = place(p);
    for (int t = 0; t < s; ++t) out[t * slice + at] = static_cast<Byte>(ops::exact::digit(X, t, s) + offset);
  }
}

// C[i][j] ← ops::exact::exact_element(S, …) [+ C[i][j]], then ops::linear_out with bias[j] when
// bias is given.
void store_element(const ops::GemmProblem& g, int i, int j, __int128 S, int E, int F, int s, bool bad,
                   const float* bias);

// The sliced operands of one product (exact_pack.cpp): s slices of op(A)'s row panels and op(B)'s
// column panels; each row's and column's scale code (ops::exact::line_code), and from it the
// scale exponent and whether the line holds a NaN or an Inf.
struct Sliced {
  int s = 0, mp = 0, np = 0, kq = 0;
  std::vector<uint8_t> a;                   // (mp, s, kq, MR, 4)
  std::vector<int8_t> b;                    // (np, s, kq, NR, 4)
  std::vector<int32_t> b_sum;               // (np, s, NR)
  std::vector<int32_t> row_code, col_code;  // (mp·MR), (np·NR)
  std::vector<int> row_exp, col_exp;        // (mp·MR), (np·NR)
  std::vector<uint8_t> row_bad, col_bad;    // (mp·MR), (np·NR): 1 where a NaN or an Inf was seen
  size_t a_slice() const { return static_cast<size_t>(kq) * MR * kQuad; }
  size_t b_slice() const { return static_cast<size_t>(kq) * NR * kQuad; }
  const uint8_t* a_at(int ip, int t) const { return a.data() + (static_cast<size_t>(ip) * s + t) * a_slice(); }
  const int8_t* b_at(int jp, int u) const { return b.data() + (static_cast<size_t>(jp) * s + u) * b_slice(); }
  const int32_t* sum_at(int jp, int u) const { return b_sum.data() + (static_cast<size_t>(jp) * s + u) * NR; }
  void resize(const ops::GemmProblem& g);
  void scale_a_panel(const ops::GemmProblem& g, int ip);  // codes of rows ip·MR … of op(A) over g.k
  void scale_b_panel(const ops::GemmProblem& g, int jp);  // codes of columns jp·NR … of op(B)
  void pack_a_panel(const ops::GemmProblem& g, int ip);   // their exponents, flags and digits
  void pack_b_panel(const ops::GemmProblem& g, int jp);

 private:
  void settle(int line, bool row);  // exponent and flag of a row or column from its code
};

// sums[c] ← Σ of column c's digits over quads [q0, q1) of a (kq, NR, 4) slice.
void column_sums(const int8_t* b, int q0, int q1, int32_t* sums);

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
