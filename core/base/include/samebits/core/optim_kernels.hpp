// The optimizers' elementwise loops and exact reductions, where the backend keeps its memory:
// host loops for the CPU backend (core/cpu/optim_kernels.cpp), CUDA kernels for the CUDA backend
// (core/cuda/optim_kernels.cu); each backend owns its kernels (Backend::optim_kernels()). Both call the same SB_HD
// formulas (ops/muon.hpp, ops/adamw.hpp, core/exact_norm.hpp) on independent elements, and every sum is exact
// (det::ExactSum parts merged as integer words), so both give the same bits for any thread count or launch
// configuration.
#pragma once
#include <cstddef>

#include "samebits/core/backend.hpp"
#include "samebits/core/ops/adamw.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

// Per-tensor statistics of the last step (one per ParamView, in layout order), exact reductions.
struct TensorUpdateStats {
  float update_rms = 0.0f;           // RMS of the applied update ΔW over the tensor
  float update_weight_ratio = 0.0f;  // ‖ΔW‖_F / ‖W‖_F, W before the step
  float ortho_error = 0.0f;          // Muon tensors: ‖XXᵀ − I‖_F / √rows of the Newton–Schulz
                                     // output (rows ≤ cols after the transpose); NaN otherwise
};

// Σ (W_after − W_before)² and Σ W_before² of one tensor's update, exactly (docs/OPTIM.md §4).
struct UpdateSums {
  det::ExactSum delta_sq, weight_sq;
  void add(float before, float after);  // add_update_squares (exact_norm.hpp)
  void merge(const UpdateSums& other) {
    delta_sq.merge(other.delta_sq);
    weight_sq.merge(other.weight_sq);
  }
  // update_rms = fl32(√(fl64(Σd²) / numel)), update_weight_ratio = fl32(√(fl64(Σd²) / fl64(ΣW²))),
  // ortho_error as given.
  TensorUpdateStats finish(size_t numel, float ortho_error) const;
};

// Every pointer is memory of the backend the kernels were made for; shapes in the comments.
// Kernels are ordered with the backend's other ops; the reductions return when their sum is known.
class OptimKernels {
 public:
  virtual ~OptimKernels() = default;

  // u ← ops::muon_momentum_step(m, g, k) (m updated in place).  m, u, g: (n)
  virtual void muon_momentum(float* m, float* u, const float* g, size_t n, const ops::MuonMomentum& k) = 0;
  // x ← ops::muon_normalize(u, denom).  x, u: (n)
  virtual void muon_normalize(float* x, const float* u, size_t n, float denom) = 0;
  // b ← ops::ns_polynomial(a, b, pb, pc); b holds A·A on entry.  a, b: (n)
  virtual void ns_polynomial(float* b, const float* a, size_t n, float pb, float pc) = 0;
  // x ← ops::ns_combine(x, bx, pa).  x, bx: (n)
  virtual void ns_combine(float* x, const float* bx, size_t n, float pa) = 0;
  // Σ ops::ortho_square(a[i][j], i == j) exactly.  a: (r, r)
  virtual det::ExactSum ortho_squares(const float* a, int r) = 0;
  // w ← ops::muon_apply(w, x, decay, step); the (before, after) pairs into *sums when non-null.
  // w, x: (n)
  virtual void muon_apply(float* w, const float* x, size_t n, float decay, float step, UpdateSums* sums) = 0;
  // The Muon variants' apply: w ← ops::muon_apply_cautious when `cautious`, else ops::muon_apply,
  // with the step row_step[i] for every element of row i when row_step is non-null (NorMuon), else
  // `step`; the (before, after) pairs into *sums when non-null.
  // w, x: (rows, cols); row_step: (rows) or null
  virtual void muon_apply_rows(float* w, const float* x, int rows, int cols, float decay, float step,
                               const float* row_step, bool cautious, UpdateSums* sums) = 0;
  // ops::adamw_update on every element; the (before, after) pairs into *sums when non-null.
  // w, m, v: (n) updated in place; g: (n)
  virtual void adamw(float* w, const float* g, float* m, float* v, size_t n, const ops::AdamWConstants& k,
                     UpdateSums* sums) = 0;
  // Σ x[i]² exactly (each square exact in fp64).  x: (n)
  virtual det::ExactSum sum_of_squares(const float* x, size_t n) = 0;
  // x[i] ← fl32(x[i]·factor).  x: (n)
  virtual void scale(float* x, size_t n, float factor) = 0;
};

}  // namespace sb
