// NorMuon's per-row step sizes (normuon.hpp). Determinism: the row sums and the two whole-matrix
// sums are exact, the formulas are ops/normuon.hpp, the rest is a fixed sequence of fp64
// operations on the host: the same bits on every thread count and backend.
#include "normuon.hpp"

#include <algorithm>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/normuon.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb::optim_detail {

NorMuonRows::NorMuonRows(Backend& backend) : backend_(backend), kernels_(backend.optim_kernels()) {}

const float* NorMuonRows::row_steps(const float* x, int rows, int cols, float* v, double beta2, double step) {
  const size_t r = static_cast<size_t>(rows), c = static_cast<size_t>(cols);
  v_host_.resize(r);
  steps_host_.resize(r);
  if (!steps_.defined() || static_cast<size_t>(steps_.numel()) < r)
    steps_ = backend_.alloc(DType::f32, {static_cast<int64_t>(r)});
  backend_.copy_to_host(v_host_.data(), v, r * sizeof(float));
  const float b2 = static_cast<float>(beta2), one_minus_b2 = static_cast<float>(1.0 - beta2);
  std::vector<double> row_sq(r);
  det::ExactSum old_sq, new_sq;
  for (size_t i = 0; i < r; ++i) {
    const det::ExactSum s = kernels_.sum_of_squares(x + i * c, c);
    old_sq.merge(s);
    row_sq[i] = s.to_f64();
    const float mean = ops::normuon_row_mean(row_sq[i], static_cast<double>(c));
    v_host_[i] = ops::normuon_second_moment(v_host_[i], mean, b2, one_minus_b2);
    const double inv = ops::normuon_inv_rms(v_host_[i]);
    new_sq.add(inv * inv * row_sq[i]);  // r² exact in fp64, one rounding for the product
  }
  // ρ = √(‖X‖²_F / ‖diag(r)·X‖²_F); the denominator floored at (1e-10)² as modded-nanogpt does.
  const double ratio = sqrt_f64(old_sq.to_f64() / std::max(new_sq.to_f64(), 1e-20));
  for (size_t i = 0; i < r; ++i) {
    const double inv = ops::normuon_inv_rms(v_host_[i]);
    steps_host_[i] = static_cast<float>(step * inv * ratio);
  }
  backend_.copy_from_host(v, v_host_.data(), r * sizeof(float));
  backend_.copy_from_host(steps_.data(), steps_host_.data(), r * sizeof(float));
  return steps_.data_as<float>();
}

}  // namespace sb::optim_detail
