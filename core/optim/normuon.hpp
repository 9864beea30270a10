// NorMuon's per-row step sizes (internal; ops/normuon.hpp holds the per-row formulas). For the
// Newton–Schulz output X (rows, cols) of one matrix: the exact row sums S_i = Σ_j X_ij² (one exact
// reduction per row on the backend), the second moment v (rows) updated, r_i = 1/√v_i, and the
// whole-matrix factor ρ = √(Σ_i S_i / Σ_i r_i²·S_i) that keeps ‖X‖_F (modded-nanogpt's rule), both
// sums exact (det::ExactSum) and rounded once; then row_step_i = fl32(fl64(step·r_i)·ρ) in fp64.
// Contract: every input is an exact sum or an fp32 value, so the steps have the same bits on every
// thread count and backend.
#pragma once
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb::optim_detail {

class NorMuonRows {
 public:
  explicit NorMuonRows(Backend& backend);
  // v ← the updated second moment, and the backend buffer returned holds row_step (rows).
  // step: fl64(lr · scale) of the matrix; beta2: the EMA factor.  x: (rows, cols), v: (rows), both
  // backend memory.
  const float* row_steps(const float* x, int rows, int cols, float* v, double beta2, double step);

 private:
  Backend& backend_;
  OptimKernels& kernels_;
  std::vector<float> v_host_, steps_host_;  // (rows)
  Tensor steps_;                            // (rows) backend memory
};

}  // namespace sb::optim_detail
