// Newton–Schulz orthogonalisation of one matrix (muon.hpp, NewtonSchulz): exact Frobenius norm,
// canonical GEMMs on the backend (rule 1) in the experiment's precision, elementwise parts from
// ops/muon.hpp where the backend keeps its memory (optim_kernels.hpp; independent elements): the
// same bits on any thread count, backend or launch configuration. On a shard (run_shard) the
// same steps with the group's sums of the norm (exact) and of each Gram matrix (the group's rule).
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
    : backend_(backend), kernels_(backend.optim_kernels()), precision_(precision), scratch_(kSlots) {}

NewtonSchulz::~NewtonSchulz() = default;

float* NewtonSchulz::scratch(int slot, size_t numel) {
  Tensor& t = scratch_[static_cast<size_t>(slot)];
  if (!t.defined() || static_cast<size_t>(t.numel()) < numel)
    t = backend_.alloc(DType::f32, {static_cast<int64_t>(numel)});
  return t.data_as<float>();
}

void NewtonSchulz::run(const float* u, float* out, int rows, int cols, const std::vector<NsStep>& steps, double eps,
                       float* ortho_error) {
  iterate(u, out, rows, cols, rows > cols ? Trans::yes : Trans::no, nullptr, steps, eps, ortho_error);
}

void NewtonSchulz::run_shard(const float* u, float* out, int rows, int cols, const MatrixShard& shard,
                             const std::vector<NsStep>& steps, double eps, float* ortho_error) {
  SB_CHECK(shard.group != nullptr, "Newton–Schulz on a shard: the shard names no group");
  iterate(u, out, rows, cols, shard.y, shard.group.get(), steps, eps, ortho_error);
}

void NewtonSchulz::iterate(const float* u, float* out, int rows, int cols, Trans y, NsGroup* group,
                           const std::vector<NsStep>& steps, double eps, float* ortho_error) {
  SB_CHECK(rows > 0 && cols > 0, "Newton–Schulz: expected a non-empty matrix, got (", rows, ", ", cols, ")");
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  det::ExactSum squares = kernels_.sum_of_squares(u, n);
  if (group != nullptr) squares = group->sum_exact(squares);
  const float norm = sqrt_rounded(squares);
  const float denom = static_cast<float>(static_cast<double>(norm) + eps);
  // The iteration is on Y = op(X) (r, c): one process takes Y = X, or Y = Xᵀ when rows > cols, so
  // that r ≤ c; a shard takes the Y whose columns are split. X stays in out, (rows, cols) with
  // leading dimension cols, and the GEMMs read Y through their transposition flags. The chains
  // are those of the iteration on a transposed copy, bit for bit: op(A)'s elements are the same
  // values in the same k order, and fma(x, y, acc) = fma(y, x, acc).
  const bool tall = y == Trans::yes;
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
    backend_.syrk(ops::syrk_problem(y, r, c, X, cols, A, r, precision_));       // A = Y·Yᵀ
    if (group != nullptr) group->sum_gram(A, rr);                               // A = Σ_ranks Y_i·Y_iᵀ
    backend_.syrk(ops::syrk_problem(Trans::no, r, r, A, r, B, r, precision_));  // A·A = A·Aᵀ (A is symmetric)
    kernels_.ns_polynomial(B, A, rr, b, cc);
    if (tall)  // (B·Y)ᵀ = X·Bᵀ: element (j, i) is B·Y's (i, j) chain
      backend_.gemm({Trans::no, Trans::yes, c, r, r, X, cols, B, r, BY, cols, false, precision_});
    else backend_.gemm({Trans::no, Trans::no, r, c, r, B, r, X, cols, BY, cols, false, precision_});
    kernels_.ns_combine(X, BY, n, a);
  }
  if (ortho_error != nullptr) {
    backend_.syrk(ops::syrk_problem(y, r, c, X, cols, A, r, Precision::fp32));
    if (group != nullptr) group->sum_gram(A, rr);
    const det::ExactSum sq = kernels_.ortho_squares(A, r);
    *ortho_error = static_cast<float>(sqrt_f64(sq.to_f64() / static_cast<double>(r)));
  }
}

}  // namespace sb
