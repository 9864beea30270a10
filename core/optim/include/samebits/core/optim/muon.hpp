// Muon (Keller Jordan 2024; Moonlight's scaling, Liu et al. 2025) on ParamKind::matrix tensors,
// AdamW on the rest (embeddings, head, norm gains, biases). Per matrix W (rows, cols) with
// gradient G and momentum M:
//   M ← μ·M + G;  U = G + μ·M (Nesterov) or M   (lerp form: M ← M + (1 − μ)·(G − M),
//   U = G + μ·(M − G) or M, torch.optim.Muon's);  X = U / (‖U‖_F + ε), transposed when rows > cols;
//   ns_steps × { A = X·Xᵀ; B = b·A + c·A·A; X = a·X + B·X };  W ← W·(1 − lr·wd) − lr·scale·X.
// Contract: the products are canonical GEMMs on the backend in the experiment's precision, the
// norm is exact, the elementwise parts are ops/muon.hpp — same bits on every configuration.
#pragma once
#include <memory>
#include <vector>

#include "samebits/core/optim/adamw.hpp"
#include "samebits/core/optim/ns_coefficients.hpp"
#include "samebits/core/optim/ns_group.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb {

// Mirrors AdamWOptions: lr and weight_decay first, then Muon's own knobs; `adam` configures the
// AdamW that updates the non-matrix tensors.
struct MuonOptions {
  double lr = 0.02;           // peak learning rate of the matrices (times StepContext::lr_factor)
  double weight_decay = 0.0;  // decoupled: W ← W·(1 − lr·wd)
  bool nesterov = true;
  MomentumForm momentum_form = MomentumForm::sum;
  std::vector<NsStep> ns{5, kKellerNs};  // one (a, b, c) per Newton–Schulz iteration
  double ns_eps = 1e-7;                  // X = U / (‖U‖_F + ns_eps)
  MuonScale scale = MuonScale::shape;
  AdamWOptions adam{};  // the other tensors
  // Variants (docs/OPTIM.md §1.1); the defaults are plain Muon.
  double extra_scale = 1.0;  // step = fl32(lr · (scale(rows, cols) · extra_scale))
  bool split_qkv = false;    // attn.qkv.w (3C, C): Newton–Schulz on each (C, C) block of rows
  bool cautious_wd = false;  // ops::muon_apply_cautious instead of ops::muon_apply
  bool normuon = false;      // NorMuon: per-row steps from a second moment (optim/normuon.hpp)
  double normuon_beta2 = 0.95;
};

// Muon with lr, weight_decay, nesterov, momentum_form, ns_schedule(optim), ns_eps, scale and the variants'
// keys; the AdamW group with lr = adam_lr, the same weight_decay, adam_betas, adam_eps (name =
// muon, or normuon with normuon = true).
MuonOptions muon_options(const OptimConfig& optim);

// The scale rule for a (rows, cols) matrix, in fp64:
//   shape √max(1, rows/cols) (Keller Jordan); moonlight 0.2·√max(rows, cols) (matches AdamW's
//   update RMS, Liu et al. 2025); spectral √(rows/cols) = √(fan_out/fan_in) (the spectral /
//   modular-norm convention, Bernstein & Newhouse 2024) = unit_rms (Emerging-Optimizers'
//   unit_rms_norm); max_dim √max(rows, cols) (Emerging-Optimizers' "spectral"); none 1.
double muon_scale(MuonScale rule, int64_t rows, int64_t cols);

// Newton–Schulz orthogonalisation of one matrix on a backend (its scratch is reused across calls).
class NewtonSchulz {
 public:
  // `precision`: the GEMM operands' precision (the experiment's; fp32 in fp32 experiments).
  NewtonSchulz(Backend& backend, Precision precision);
  ~NewtonSchulz();
  // out ← NS(u): denom = fl32(fl64(‖U‖_F) + eps) with the exact norm; X₀ = U / denom; then one
  // iteration per entry of `steps` on Y = X, or Y = Xᵀ when rows > cols, so that Y is r × c with
  // r ≤ c (read through the GEMMs' transposition flags, in place in out). When ortho_error is non-null it receives
  // ‖XXᵀ − I‖_F / √r of the output (one more GEMM, fp32 operands; the squares (A − I)² rounded
  // in fp64, summed exactly).  u, out: (rows, cols), backend memory, distinct.
  void run(const float* u, float* out, int rows, int cols, const std::vector<NsStep>& steps, double eps,
           float* ortho_error = nullptr);
  // The same on this rank's shard u, out (rows, cols) of a matrix split over shard.group
  // (ns_group.hpp): Y = op(X) by shard.y, the norm ‖U‖_F of the full matrix (exact: the
  // one-process denom), each A = Σ_ranks Y_i·Y_iᵀ by the group's sum_gram, then B = b·A + c·A·A
  // and X_i = a·X_i + B·X_i locally; ortho_error of the full output (its Gram summed alike).
  // Collective over the group.
  void run_shard(const float* u, float* out, int rows, int cols, const MatrixShard& shard,
                 const std::vector<NsStep>& steps, double eps, float* ortho_error = nullptr);

 private:
  void iterate(const float* u, float* out, int rows, int cols, Trans y, NsGroup* group,
               const std::vector<NsStep>& steps, double eps, float* ortho_error);
  float* scratch(int slot, size_t numel);
  Backend& backend_;
  OptimKernels& kernels_;  // the elementwise parts, in backend memory (the backend's own)
  Precision precision_;
  std::vector<Tensor> scratch_;  // B·Y (r, c), A (r, r), A·A then B (r, r)
};

// Newton–Schulz flops of one update of a (rows, cols) matrix: steps·(4r²c + 2r³), r = min, c = max.
double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps);

// Muon::update_cost of a layout: Newton–Schulz flops of each matrix (split_qkv: of its three
// blocks), the element count of every other tensor.
std::vector<double> muon_update_cost(const MuonOptions& options, const std::vector<ParamView>& params);

// Muon on the matrices, AdamW on the rest; state "momentum" per owned matrix (and under NorMuon
// "second_moment", one value per row), "exp_avg" and "exp_avg_sq" per owned other tensor.

// True for a fused attention projection h.L.attn.qkv.w of shape (3C, C), which split_qkv
// orthogonalises as three (C, C) blocks (Q, K, V).
bool is_fused_qkv(const ParamView& p);
class Muon final : public Optimizer {
 public:
  Muon(const std::vector<ParamView>& params, Backend& backend, Precision precision, const MuonOptions& options);
  ~Muon() override;

  // μ comes from ctx.muon_momentum (schedule.hpp: muon_momentum), lr from ctx.lr_factor.
  void step(float* weights, const float* grads, const StepContext& ctx) override;
  std::vector<StateBuffer> state() override;
  size_t state_bytes() const override;
  const std::vector<TensorUpdateStats>& last_stats() const override;
  void set_owned(const std::vector<bool>& owned) override;
  std::vector<double> update_cost() const override;
  // One MatrixShard per tensor (layout order; group null for the whole ones): sharded matrices
  // take Newton–Schulz over their group (run_shard), the scale rule and the update statistics of
  // the full matrix (split_qkv: its Q, K, V blocks, each row-split alike). The matrices are then
  // updated one after another in layout order (the group's collectives in one order on every
  // rank). Throws sb::Error for a shard that does not fit its tensor, or under NorMuon.
  void set_shards(std::vector<MatrixShard> shards);

  const MuonOptions& options() const { return options_; }

 private:
  class Impl;
  MuonOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sb
