// The optimizers' loops as CUDA kernels (optim/optim_kernels.hpp), bitwise equal to the host loops
// of core/optim/optim_kernels.cpp: one thread per element calls the same ops/ formulas; every sum
// is one det::ExactSum per thread, merged as integer words (exact_reduce.cuh) and read back once,
// so no grid, block size or atomic order changes a bit.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "exact_reduce.cuh"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/adamw.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb::cuda {
namespace {

constexpr int kWords = kExactWords;

// ---- terms and elementwise functors --------------------------------------------------------------

struct OrthoSquares {
  const float* a;  // (r, r)
  int64_t r;
  __device__ void operator()(int64_t i, det::ExactSum* s) const { s[0].add(ops::ortho_square(a[i], i % (r + 1) == 0)); }
};

struct MuonMomentum {
  float* m;        // (n)
  float* u;        // (n)
  const float* g;  // (n)
  ops::MuonMomentum k;
  __device__ void operator()(int64_t j) const { u[j] = ops::muon_momentum_step(m[j], g[j], k); }
};

struct MuonNormalize {
  float* x;        // (n)
  const float* u;  // (n)
  float denom;
  __device__ void operator()(int64_t k) const { x[k] = ops::muon_normalize(u[k], denom); }
};

struct NsPolynomial {
  float* b;        // (n): A·A on entry
  const float* a;  // (n)
  float pb, pc;
  __device__ void operator()(int64_t k) const { b[k] = ops::ns_polynomial(a[k], b[k], pb, pc); }
};

struct NsCombine {
  float* x;         // (n)
  const float* bx;  // (n)
  float pa;
  __device__ void operator()(int64_t k) const { x[k] = ops::ns_combine(x[k], bx[k], pa); }
};

struct Scale {
  float* x;  // (n)
  float factor;
  __device__ void operator()(int64_t i) const { x[i] = x[i] * factor; }
};

struct MuonApply {
  float* w;        // (n)
  const float* x;  // (n)
  float decay, step;
  __device__ float operator()(int64_t j) const {
    const float before = w[j];
    w[j] = ops::muon_apply(before, x[j], decay, step);
    return before;
  }
  __device__ void operator()(int64_t j, det::ExactSum* s) const {
    const float before = (*this)(j);
    add_update_squares(s[0], s[1], before, w[j]);
  }
};

struct MuonApplyRows {
  float* w;               // (rows, cols)
  const float* x;         // (rows, cols)
  const float* row_step;  // (rows) or null
  int64_t cols;
  float decay, step;
  bool cautious;
  __device__ float operator()(int64_t j) const {
    const float before = w[j];
    const float s = row_step != nullptr ? row_step[j / cols] : step;
    w[j] = cautious ? ops::muon_apply_cautious(before, x[j], decay, s) : ops::muon_apply(before, x[j], decay, s);
    return before;
  }
  __device__ void operator()(int64_t j, det::ExactSum* s) const {
    const float before = (*this)(j);
    add_update_squares(s[0], s[1], before, w[j]);
  }
};

struct AdamWUpdate {
  float* w;        // (n)
  const float* g;  // (n)
  float* m;        // (n)
  float* v;        // (n)
  ops::AdamWConstants k;
  __device__ float operator()(int64_t i) const {
    const float before = w[i];
    ops::adamw_update(&w[i], &m[i], &v[i], g[i], k);
    return before;
  }
  __device__ void operator()(int64_t i, det::ExactSum* s) const {
    const float before = (*this)(i);
    add_update_squares(s[0], s[1], before, w[i]);
  }
};

// ---- the kernels object --------------------------------------------------------------------------

class CudaOptimKernels final : public OptimKernels {
 public:
  explicit CudaOptimKernels(CudaBackend& be) : be_(be), words_(be.alloc(DType::i64, {2 * kWords})) {}

  void muon_momentum(float* m, float* u, const float* g, size_t n, const ops::MuonMomentum& k) override {
    be_.activate();
    for_each(be_, count(n), MuonMomentum{m, u, g, k});
  }

  void muon_normalize(float* x, const float* u, size_t n, float denom) override {
    be_.activate();
    for_each(be_, count(n), MuonNormalize{x, u, denom});
  }

  void ns_polynomial(float* b, const float* a, size_t n, float pb, float pc) override {
    be_.activate();
    for_each(be_, count(n), NsPolynomial{b, a, pb, pc});
  }

  void ns_combine(float* x, const float* bx, size_t n, float pa) override {
    be_.activate();
    for_each(be_, count(n), NsCombine{x, bx, pa});
  }

  det::ExactSum ortho_squares(const float* a, int r) override {
    det::ExactSum s[1];
    reduce<1>(int64_t{r} * r, OrthoSquares{a, r}, s);
    return s[0];
  }

  void muon_apply(float* w, const float* x, size_t n, float decay, float step, UpdateSums* sums) override {
    update(n, MuonApply{w, x, decay, step}, sums);
  }

  void muon_apply_rows(float* w, const float* x, int rows, int cols, float decay, float step, const float* row_step,
                       bool cautious, UpdateSums* sums) override {
    update(static_cast<size_t>(rows) * static_cast<size_t>(cols),
           MuonApplyRows{w, x, row_step, cols, decay, step, cautious}, sums);
  }

  void adamw(float* w, const float* g, float* m, float* v, size_t n, const ops::AdamWConstants& k,
             UpdateSums* sums) override {
    update(n, AdamWUpdate{w, g, m, v, k}, sums);
  }

  det::ExactSum sum_of_squares(const float* x, size_t n) override {
    det::ExactSum s[1];
    reduce<1>(count(n), SumSquares{x}, s);
    return s[0];
  }

  void scale(float* x, size_t n, float factor) override {
    be_.activate();
    for_each(be_, count(n), Scale{x, factor});
  }

 private:
  static int64_t count(size_t n) { return static_cast<int64_t>(n); }

  // The update alone, or with its exact sums (delta_sq, weight_sq) into *sums (added to it).
  template <class Update>
  void update(size_t n, const Update& f, UpdateSums* sums) {
    if (sums == nullptr) {
      be_.activate();
      for_each(be_, count(n), f);
      return;
    }
    det::ExactSum s[2];
    reduce<2>(count(n), f, s);
    UpdateSums part{s[0], s[1]};
    sums->merge(part);
  }

  // out[0..S) = the exact sums of term over i < n (exact_reduce_kernel), read back to the host.
  template <int S, class Term>
  void reduce(int64_t n, const Term& term, det::ExactSum* out) {
    be_.activate();
    unsigned long long* words = static_cast<unsigned long long*>(words_.data());  // (S, kWords)
    be_.zero(words, S * kWords * sizeof(unsigned long long));
    exact_reduce<S>(be_, n, term, words);
    unsigned long long host[S * kWords];
    be_.download(host, words, sizeof host);
    for (int s = 0; s < S; ++s) out[s] = exact_from_words(host + s * kWords);
  }

  CudaBackend& be_;
  Tensor words_;  // (2, kWords) int64: the reductions' merged words
};

}  // namespace

std::unique_ptr<OptimKernels> make_optim_kernels(CudaBackend& backend) {
  return std::make_unique<CudaOptimKernels>(backend);
}

}  // namespace sb::cuda
