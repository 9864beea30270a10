// Helpers of the optimizer tests (tests/unit/test_optim_*.cpp): small layouts, seeded flat
// buffers, fp64 reference Newton–Schulz / Muon / AdamW written from the published algorithms.
// Tests only: the outside reference the optimizers are compared with (tolerances), never used
// for bitwise claims.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/ns_coefficients.hpp"

namespace sb::test {

// Tensors (name, shape, kind) packed at kParamAlign offsets; init fields unused.
inline std::vector<ParamView> make_layout(const std::vector<std::tuple<std::string, Shape, ParamKind>>& tensors,
                                          size_t* flat_size) {
  std::vector<ParamView> out;
  size_t offset = 0;
  for (const auto& [name, shape, kind] : tensors) {
    const size_t n = static_cast<size_t>(shape_numel(shape));
    out.push_back({name, shape, offset, n, kind, 0.0f, 0.0f});
    offset += (n + kParamAlign - 1) / kParamAlign * kParamAlign;
  }
  *flat_size = offset;
  return out;
}

// flat_size values, normal(0, std) on every tensor element and 0 in the padding.
inline std::vector<float> random_flat(const std::vector<ParamView>& layout, size_t flat_size, uint32_t seed,
                                      float std) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, std);
  std::vector<float> v(flat_size, 0.0f);
  for (const ParamView& p : layout)
    for (size_t i = 0; i < p.numel; ++i) v[p.offset + i] = dist(rng);
  return v;
}

// C (m, n) = A (m, k) · B (k, n) in fp64.
inline std::vector<double> matmul64(const std::vector<double>& a, const std::vector<double>& b, int m, int k, int n) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p) {
      const double aip = a[static_cast<size_t>(i) * k + p];
      for (int j = 0; j < n; ++j) c[static_cast<size_t>(i) * n + j] += aip * b[static_cast<size_t>(p) * n + j];
    }
  return c;
}

inline std::vector<double> transpose64(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[static_cast<size_t>(j) * rows + i] = a[static_cast<size_t>(i) * cols + j];
  return t;
}

// Keller Jordan's zeropower_via_newtonschulz5 in fp64 with a coefficient list: X = U/(‖U‖_F + eps),
// transposed when rows > cols, then X ← aX + (bA + cA²)X with A = XXᵀ; returned (rows, cols).
inline std::vector<double> newton_schulz64(const std::vector<double>& u, int rows, int cols,
                                           const std::vector<NsStep>& steps, double eps) {
  double sq = 0.0;
  for (double v : u) sq += v * v;
  const double denom = std::sqrt(sq) + eps;
  const bool tr = rows > cols;
  std::vector<double> x = tr ? transpose64(u, rows, cols) : u;
  const int r = tr ? cols : rows, c = tr ? rows : cols;
  for (double& v : x) v /= denom;
  for (const NsStep& s : steps) {
    const std::vector<double> a = matmul64(x, transpose64(x, r, c), r, c, r);
    const std::vector<double> aa = matmul64(a, a, r, r, r);
    std::vector<double> b(a.size());
    for (size_t i = 0; i < a.size(); ++i) b[i] = s.b * a[i] + s.c * aa[i];
    const std::vector<double> bx = matmul64(b, x, r, r, c);
    for (size_t i = 0; i < x.size(); ++i) x[i] = s.a * x[i] + bx[i];
  }
  return tr ? transpose64(x, r, c) : x;
}

// ‖XXᵀ − I‖_F / √r for X (rows, cols) oriented with r = min(rows, cols), in fp64.
inline double ortho_error64(const std::vector<double>& x, int rows, int cols) {
  const bool tr = rows > cols;
  const std::vector<double> xr = tr ? transpose64(x, rows, cols) : x;
  const int r = tr ? cols : rows, c = tr ? rows : cols;
  const std::vector<double> a = matmul64(xr, transpose64(xr, r, c), r, c, r);
  double s = 0.0;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) {
      const double d = a[static_cast<size_t>(i) * r + j] - (i == j ? 1.0 : 0.0);
      s += d * d;
    }
  return std::sqrt(s / r);
}

// max |a − b| / max |b| (normwise relative error, max norm).
inline double rel_error(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(a[i] - b[i]));
    den = std::max(den, std::fabs(b[i]));
  }
  return num / den;
}

// The worst rel_error, over the matrices of `layout`, of the total update W_T − W_0: samebits'
// fp32 weights `w` against the fp64 reference `w64` (one vector per tensor), both from `w0`.
inline double worst_matrix_update_error(const std::vector<ParamView>& layout, const std::vector<float>& w,
                                        const std::vector<float>& w0, const std::vector<std::vector<double>>& w64) {
  double worst = 0.0;
  for (size_t t = 0; t < layout.size(); ++t) {
    const auto& p = layout[t];
    if (p.kind != ParamKind::matrix) continue;
    std::vector<double> d_sb(p.numel), d_ref(p.numel);
    for (size_t i = 0; i < p.numel; ++i) {
      d_sb[i] = static_cast<double>(w[p.offset + i]) - w0[p.offset + i];
      d_ref[i] = w64[t][i] - w0[p.offset + i];
    }
    worst = std::max(worst, rel_error(d_sb, d_ref));
  }
  return worst;
}

}  // namespace sb::test
