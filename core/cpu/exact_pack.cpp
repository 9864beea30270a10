// Slicing for the exact GEMM: each row of op(A) and column of op(B), rounded to the GEMM precision,
// gets its scale exponent from its largest finite magnitude, then every element its integer operand
// and s digits (ops/exact_gemm.hpp), packed in the kernels' layout (exact_gemm.hpp). Per-element
// work and an exact max: nothing here depends on an order.
#include <algorithm>

#include "exact_gemm.hpp"

namespace sb::cpu::exact {

namespace ex = ops::exact;

void line_scale(const Line& line, int i, int k, int* exp, uint8_t* bad) {
  float max_abs = 0.0f;
  bool nonfinite = false;
  for (int p = 0; p < k; ++p) {
    const float x = line.at(i, p);
    if (!ex::is_finite(x)) nonfinite = true;
    else max_abs = std::max(max_abs, det::float_of_bits(det::bits_of(x) & 0x7fffffffu));
  }
  *exp = ex::scale_exponent(max_abs);
  *bad = nonfinite ? 1 : 0;
}

Line a_line(const gemm::Problem& g) {
  return g.ta == Trans::no ? Line{g.a, 1, static_cast<size_t>(g.lda), g.prec}
                           : Line{g.a, static_cast<size_t>(g.lda), 1, g.prec};
}
Line b_line(const gemm::Problem& g) {
  return g.tb == Trans::no ? Line{g.b, static_cast<size_t>(g.ldb), 1, g.prec}
                           : Line{g.b, 1, static_cast<size_t>(g.ldb), g.prec};
}

namespace {

// The kernels' panel layout (kq, lanes, 4) of position `lane` of a panel `lanes` wide.
struct PanelPlace {
  int lane, lanes;
  size_t operator()(int p) const { return (static_cast<size_t>(p / kQuad) * lanes + lane) * kQuad + p % kQuad; }
};

}  // namespace

void Sliced::resize(const gemm::Problem& g) {
  s = ex::slices(g.prec);
  mp = (g.m + MR - 1) / MR;
  np = (g.n + NR - 1) / NR;
  kq = (g.k + kQuad - 1) / kQuad;
  a.resize(static_cast<size_t>(mp) * s * a_slice());
  b.resize(static_cast<size_t>(np) * s * b_slice());
  b_sum.resize(static_cast<size_t>(np) * s * NR);
  row_exp.resize(static_cast<size_t>(mp) * MR);
  row_bad.resize(row_exp.size());
  col_exp.resize(static_cast<size_t>(np) * NR);
  col_bad.resize(col_exp.size());
}

void Sliced::pack_a_panel(const gemm::Problem& g, int ip) {
  uint8_t* out = a.data() + static_cast<size_t>(ip) * s * a_slice();
  std::fill(out, out + s * a_slice(), static_cast<uint8_t>(kOffset));  // digit 0 beyond m and k
  const Line line = a_line(g);
  for (int r = 0; r < MR && ip * MR + r < g.m; ++r) {
    const int i = ip * MR + r;
    line_scale(line, i, g.k, &row_exp[i], &row_bad[i]);
    line_digits(line, i, g.k, row_exp[i], s, a_slice(), kOffset, PanelPlace{r, MR}, out);
  }
}

void Sliced::pack_b_panel(const gemm::Problem& g, int jp) {
  int8_t* out = b.data() + static_cast<size_t>(jp) * s * b_slice();
  std::fill(out, out + s * b_slice(), static_cast<int8_t>(0));
  const Line line = b_line(g);
  for (int c = 0; c < NR && jp * NR + c < g.n; ++c) {
    const int j = jp * NR + c;
    line_scale(line, j, g.k, &col_exp[j], &col_bad[j]);
    line_digits(line, j, g.k, col_exp[j], s, b_slice(), 0, PanelPlace{c, NR}, out);
  }
  int32_t* sums = b_sum.data() + static_cast<size_t>(jp) * s * NR;  // (s, NR)
  for (int u = 0; u < s; ++u)
    for (int c = 0; c < NR; ++c) {
      int32_t sum = 0;
      for (int q = 0; q < kq; ++q)
        for (int l = 0; l < kQuad; ++l) sum += out[u * b_slice() + (static_cast<size_t>(q) * NR + c) * kQuad + l];
      sums[u * NR + c] = sum;
    }
}

}  // namespace sb::cpu::exact
