// Newton–Schulz orthogonalisation of one matrix (muon.hpp, NewtonSchulz): exact Frobenius norm,
// canonical GEMMs on the backend (rule 1) in the experiment's precision, elementwise parts from
// ops/muon.hpp where the backend keeps its memory (optim_kernels.hpp; independent elements): the
// same bits on any thread count, backend or launch configuration.
#include <algorithm>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"

namespace sb {

namespace {

enum Slot { kBY, kA, kB, kSlots };

}  // namespace

double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps) {
  const double r = static_cast<double>(std::min(rows, cols));
  const double c = static_cast<double>(std::max(rows, cols));
  return static_cast<double>(steps) * (4.0 * r * r * c + 2.0 * r * r * r);
}

NewtonSchulz::NewtonSchulz(Backend& backend, Precision precision)
    : backend_(backend),
      kernels_(backend.optim_kernels()),
      precision_(precision),
      scratch_(kSlots) {}

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
  const float norm = sqrt_rounded(kernels_.sum_of_squares(u, n));
  const float denom = static_cast<float>(static_cast<double>(norm) + eps);
  // The iteration is on Y (r, c) with r ≤ c: Y = X, or Y = Xᵀ when rows > cols. X stays in out,
  // (rows, cols) with leading dimension cols, and the GEMMs read Y through their transposition
  // flags. The chains are those of the iteration on a transposed copy, bit for bit: op(A)'s
  // elements are the same values in the same k order, and fma(x, y, acc) = fma(y, x, acc).
  const bool tall = rows > cols;
  const Trans y = tall ? Trans::yes : Trans::no;  // Y = op(X)
  const int r = tall ? cols : rows, c = tall ? rows : cols;
  const size_t rr = static_cast<size_t>(r) * static_cast<size_t>(r);
  float* const X = out;
  float* const BY = scratch(kBY, n);
  float* const A = scratch(kA, rr);
  float* const B = scratch(kB, rr);
  kernels_.muon_normalize(X, u, n, denom);
  int64_t iteration = 0;
  for (const NsStep& s : steps) {
    const trace::Scope site = trace::Scope::within(backend_, " iter ", ++iteration);  // "… iter 2"
    const float a = static_cast<float>(s.a), b = static_cast<float>(s.b), cc = static_cast<float>(s.c);
    backend_.syrk(y, r, c, X, cols, A, r, precision_);       // A = Y·Yᵀ
    backend_.syrk(Trans::no, r, r, A, r, B, r, precision_);  // A·A = A·Aᵀ (A is symmetric)
    kernels_.ns_polynomial(B, A, rr, b, cc);
    if (tall)  // (B·Y)ᵀ = X·Bᵀ: element (j, i) is B·Y's (i, j) chain
      backend_.gemm(Trans::no, Trans::yes, c, r, r, X, cols, B, r, BY, cols, false, precision_);
    else
      backend_.gemm(Trans::no, Trans::no, r, c, r, B, r, X, cols, BY, cols, false, precision_);
    kernels_.ns_combine(X, BY, n, a);
  }
  if (ortho_error != nullptr) {
    backend_.syrk(y, r, c, X, cols, A, r, Precision::fp32);
    const det::ExactSum sq = kernels_.ortho_squares(A, r);
    *ortho_error = static_cast<float>(sqrt_f64(sq.to_f64() / static_cast<double>(r)));
  }
}

}  // namespace sb
