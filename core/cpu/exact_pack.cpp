// Slicing for the exact GEMM: each row of op(A) and column of op(B), rounded to the GEMM precision,
// gets its scale exponent from its largest finite magnitude, then every element its integer operand
// and its int16 digits (ops/exact_gemm.hpp), packed in the kernels' layout (exact_gemm.hpp) by the
// panel work of exact_panel.cpp. Per-element work and an exact max: nothing here depends on an order.
#include <algorithm>

#include "exact_gemm.hpp"

namespace sb::cpu::exact {

namespace ex = ops::exact;

namespace {

// The scale code of line i over k (ops::exact::line_code).
int32_t line_code(const Line& line, int i, int k) {
  float max_abs = 0.0f;
  bool nonfinite = false;
  for (int p = 0; p < k; ++p) {
    const float x = line.at(i, p);
    if (!ex::is_finite(x)) nonfinite = true;
    else max_abs = std::max(max_abs, det::float_of_bits(det::bits_of(x) & 0x7fffffffu));
  }
  return ex::line_code(max_abs, nonfinite);
}

}  // namespace

void line_scale(const Line& line, int i, int k, int* exp, uint8_t* bad) {
  const int32_t code = line_code(line, i, k);
  *exp = ex::code_exponent(code);
  *bad = ex::code_nonfinite(code) ? 1 : 0;
}

Line a_line(const ops::GemmProblem& g) {
  return g.ta == Trans::no ? Line{g.a, 1, static_cast<size_t>(g.lda), g.precision}
                           : Line{g.a, static_cast<size_t>(g.lda), 1, g.precision};
}
Line b_line(const ops::GemmProblem& g) {
  return g.tb == Trans::no ? Line{g.b, static_cast<size_t>(g.ldb), 1, g.precision}
                           : Line{g.b, 1, static_cast<size_t>(g.ldb), g.precision};
}

void Sliced::resize(const ops::GemmProblem& g, Isa isa) {
  s = ex::slices(g.precision);
  dg = kernel_digits(s);
  work = panel_work(own_isa(isa), g.precision);
  round = round_row(own_isa(isa), g.precision);
  mp = (g.m + MR - 1) / MR;
  np = (g.n + NR - 1) / NR;
  kp = (g.k + kPair - 1) / kPair;
  a.resize(static_cast<size_t>(mp) * dg.count * a_slice());
  b.resize(static_cast<size_t>(np) * dg.count * b_slice());
  row_code.assign(static_cast<size_t>(mp) * MR, 0);
  row_exp.resize(row_code.size());
  row_bad.resize(row_code.size());
  col_code.assign(static_cast<size_t>(np) * NR, 0);
  col_exp.resize(col_code.size());
  col_bad.resize(col_code.size());
}

void Sliced::scale_a_panel(const ops::GemmProblem& g, int ip) {
  const int i0 = ip * MR;
  work.codes(a_line(g), i0, std::min(MR, g.m - i0), g.k, &row_code[i0]);
}

void Sliced::scale_b_panel(const ops::GemmProblem& g, int jp) {
  const int j0 = jp * NR;
  work.codes(b_line(g), j0, std::min(NR, g.n - j0), g.k, &col_code[j0]);
}

void Sliced::settle(int line, bool row) {
  const int32_t code = row ? row_code[line] : col_code[line];
  (row ? row_exp : col_exp)[line] = ex::code_exponent(code);
  (row ? row_bad : col_bad)[line] = ex::code_nonfinite(code) ? 1 : 0;
}

void Sliced::pack_a_panel(const ops::GemmProblem& g, int ip) {
  int32_t* out = a_at(ip, 0);
  std::fill(out, out + dg.count * a_slice(), 0);  // digit 0 beyond m and k
  const int i0 = ip * MR, w = std::min(MR, g.m - i0);
  for (int i = i0; i < i0 + w; ++i) settle(i, true);
  work.digits(a_line(g), i0, w, MR, g.k, &row_exp[i0], a_slice(), out);
}

void Sliced::pack_b_panel(const ops::GemmProblem& g, int jp) {
  int32_t* out = b_at(jp, 0);
  std::fill(out, out + dg.count * b_slice(), 0);
  const int j0 = jp * NR, w = std::min(NR, g.n - j0);
  for (int j = j0; j < j0 + w; ++j) settle(j, false);
  work.digits(b_line(g), j0, w, NR, g.k, &col_exp[j0], b_slice(), out);
}

}  // namespace sb::cpu::exact
