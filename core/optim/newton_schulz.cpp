// Newton–Schulz orthogonalisation of one matrix (muon.hpp, NewtonSchulz): exact Frobenius norm,
// canonical GEMMs on the backend (rule 1) in the experiment's precision, elementwise parts from
// ops/muon.hpp on OpenMP threads (independent elements): the same bits on any thread count.
#include <algorithm>

#include "samebits/core/ops/muon.hpp"
#include "samebits/core/optim/exact_norm.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/det/error.hpp"
#include "tensor_state.hpp"

namespace sb {

namespace {

enum Slot { kX, kBX, kA, kB, kSlots };

template <class F>
void parallel_for(size_t n, const F& f) {
  const ptrdiff_t count = static_cast<ptrdiff_t>(n);
#pragma omp parallel for schedule(static) if (count >= 8192)
  for (ptrdiff_t i = 0; i < count; ++i) f(static_cast<size_t>(i));
}

}  // namespace

double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps) {
  const double r = static_cast<double>(std::min(rows, cols));
  const double c = static_cast<double>(std::max(rows, cols));
  return static_cast<double>(steps) * (4.0 * r * r * c + 2.0 * r * r * r);
}

NewtonSchulz::NewtonSchulz(Backend& backend, Precision precision)
    : backend_(backend), precision_(precision), scratch_(kSlots) {
  optim_detail::require_host_backend(backend, "Newton–Schulz");
}

NewtonSchulz::~NewtonSchulz() = default;

float* NewtonSchulz::scratch(int slot, size_t numel) {
  Tensor& t = scratch_[static_cast<size_t>(slot)];
  if (!t.defined() || static_cast<size_t>(t.numel()) < numel)
    t = backend_.alloc(DType::f32, {static_cast<int64_t>(numel)});
  return t.data_as<float>();
}

void NewtonSchulz::run(const float* u, float* out, int rows, int cols,
                       const std::vector<NsStep>& steps, double eps, float* ortho_error) {
  SB_CHECK(rows > 0 && cols > 0, "Newton–Schulz: expected a non-empty matrix, got (", rows, ", ",
           cols, ")");
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  last_norm_ = norm2(u, n);
  const float denom = static_cast<float>(static_cast<double>(last_norm_) + eps);
  // Work on X (r, c) with r ≤ c: the transpose when rows > cols.
  const bool transpose = rows > cols;
  const int r = transpose ? cols : rows, c = transpose ? rows : cols;
  const size_t rr = static_cast<size_t>(r) * static_cast<size_t>(r);
  float* const X = scratch(kX, n);
  float* const BX = scratch(kBX, n);
  float* const A = scratch(kA, rr);
  float* const B = scratch(kB, rr);
  parallel_for(n, [&](size_t k) {
    const size_t i = k / static_cast<size_t>(cols), j = k % static_cast<size_t>(cols);
    const size_t dst = transpose ? j * static_cast<size_t>(rows) + i : k;
    X[dst] = ops::muon_normalize(u[k], denom);
  });
  for (const NsStep& s : steps) {
    const float a = static_cast<float>(s.a), b = static_cast<float>(s.b), cc = static_cast<float>(s.c);
    backend_.syrk(Trans::no, r, c, X, c, A, r, precision_);  // A = X·Xᵀ
    backend_.syrk(Trans::no, r, r, A, r, B, r, precision_);  // A·A = A·Aᵀ (A is symmetric)
    parallel_for(rr, [&](size_t k) { B[k] = ops::ns_polynomial(A[k], B[k], b, cc); });
    backend_.gemm(Trans::no, Trans::no, r, c, r, B, r, X, c, BX, c, false, precision_);  // B·X
    parallel_for(n, [&](size_t k) { X[k] = ops::ns_combine(X[k], BX[k], a); });
  }
  if (ortho_error != nullptr) {
    backend_.syrk(Trans::no, r, c, X, c, A, r, Precision::fp32);
    det::ExactSum sq;
    for (size_t k = 0; k < rr; ++k) {
      const double d = static_cast<double>(A[k]) - (k % static_cast<size_t>(r + 1) == 0 ? 1.0 : 0.0);
      sq.add(d * d);
    }
    *ortho_error = static_cast<float>(sqrt_f64(sq.to_f64() / static_cast<double>(r)));
  }
  parallel_for(n, [&](size_t k) {
    const size_t i = k / static_cast<size_t>(cols), j = k % static_cast<size_t>(cols);
    out[k] = transpose ? X[j * static_cast<size_t>(rows) + i] : X[k];
  });
}

}  // namespace sb
