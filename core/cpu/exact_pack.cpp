// Slicing for the exact GEMM: each row of op(A) and column of op(B), rounded to the GEMM precision,
// gets its scale exponent from its largest finite magnitude, then every element its integer operand
// and s digits (ops/exact_gemm.hpp), packed in the kernels' layout (exact_gemm.hpp). Per-element
// work and an exact max: nothing here depends on an order.
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

// The kernels' panel layout (kq, lanes, 4) of position `lane` of a panel `lanes` wide.
struct PanelPlace {
  int lane, lanes;
  size_t operator()(int p) const { return (static_cast<size_t>(p / kQuad) * lanes + lane) * kQuad + p % kQuad; }
};

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

void Sliced::resize(const ops::GemmProblem& g) {
  s = ex::slices(g.precision);
  mp = (g.m + MR - 1) / MR;
  np = (g.n + NR - 1) / NR;
  kq = (g.k + kQuad - 1) / kQuad;
  a.resize(static_cast<size_t>(mp) * s * a_slice());
  b.resize(static_cast<size_t>(np) * s * b_slice());
  b_sum.resize(static_cast<size_t>(np) * s * NR);
  row_code.assign(static_cast<size_t>(mp) * MR, 0);
  row_exp.resize(row_code.size());
  row_bad.resize(row_code.size());
  col_code.assign(static_cast<size_t>(np) * NR, 0);
  col_exp.resize(col_code.size());
  col_bad.resize(col_code.size());
}

void Sliced::scale_a_panel(const ops::GemmProblem& g, int ip) {
  const Line line = a_line(g);
  for (int i = ip * MR; i < std::min(g.m, (ip + 1) * MR); ++i) row_code[i] = line_code(line, i, g.k);
}

void Sliced::scale_b_panel(const ops::GemmProblem& g, int jp) {
  const Line line = b_line(g);
  for (int j = jp * NR; j < std::min(g.n, (jp + 1) * NR); ++j) col_code[j] = line_code(line, j, g.k);
}

void Sliced::settle(int line, bool row) {
  const int32_t code = row ? row_code[line] : col_code[line];
  (row ? row_exp : col_exp)[line] = ex::code_exponent(code);
  (row ? row_bad : col_bad)[line] = ex::code_nonfinite(code) ? 1 : 0;
}

void Sliced::pack_a_panel(const ops::GemmProblem& g, int ip) {
  uint8_t* out = a.data() + static_cast<size_t>(ip) * s * a_slice();
  std::fill(out, out + s * a_slice(), static_cast<uint8_t>(kOffset));  // digit 0 beyond m and k
  const Line line = a_line(g);
  for (int r = 0; r < MR && ip * MR + r < g.m; ++r) {
    const int i = ip * MR + r;
    settle(i, true);
    line_digits(line, i, g.k, row_exp[i], s, a_slice(), kOffset, PanelPlace{r, MR}, out);
  }
}

void Sliced::pack_b_panel(const ops::GemmProblem& g, int jp) {
  int8_t* out = b.data() + static_cast<size_t>(jp) * s * b_slice();
  std::fill(out, out + s * b_slice(), static_cast<int8_t>(0));
  const Line line = b_line(g);
  for (int c = 0; c < NR && jp * NR + c < g.n; ++c) {
    const int j = jp * NR + c;
    settle(j, false);
    line_digits(line, j, g.k, col_exp[j], s, b_slice(), 0, PanelPlace{c, NR}, out);
  }
  for (int u = 0; u < s; ++u) column_sums(b_at(jp, u), 0, kq, b_sum.data() + (static_cast<size_t>(jp) * s + u) * NR);
}

void column_sums(const int8_t* b, int q0, int q1, int32_t* sums) {
  for (int c = 0; c < NR; ++c) {
    int32_t sum = 0;
    for (int q = q0; q < q1; ++q)
      for (int l = 0; l < kQuad; ++l) sum += b[(static_cast<size_t>(q) * NR + c) * kQuad + l];
    sums[c] = sum;
  }
}

}  // namespace sb::cpu::exact
