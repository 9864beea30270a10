// QK-clip of MuonClip (Kimi Team 2025, "Kimi K2: Open Agentic Intelligence", arXiv:2507.20534
// §2.1; optim.qk_clip = τ > 0). Per step, S_h = the largest attention logit of head h of every
// block over the step's leaves and ranks (the forward's own logits, ops/qk_clip.hpp); after the
// update, each head with S_h > τ has its rows of W_q and W_k (and of the q, k biases) multiplied
// by γ_h = fl32(√(τ / S_h)) (fp64 inside), so its logits shrink by about τ / S_h.
// Contract: the logits are canonical dots, the max is over ordered keys (one value in any order,
// over threads, leaves, micro-steps and ranks), the factor a pure fp64 function of (τ, S_h): the
// same bits on every configuration and backend. The maxima and the rescaling run where the
// weights and activations live, through the Backend (qk_max_keys, qk_clip_scale); the host sees
// n_layer × n_head keys per step.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/gpt.hpp"

namespace sb {

// The running per-head maxima of one step, as ordered keys (ops::logit_key) in the backend's
// memory: (n_layer × n_head).
class QkMaxLogits {
 public:
  QkMaxLogits(Backend& backend, int n_layer, int n_head);  // backend outlives this object
  void clear();                                            // every key to the key of −Inf (no logit seen)
  // One leaf's forward: qkv of block `layer`, (B, T, 3C) in the backend's memory, rows [q | k | v].
  void add(int layer, const float* qkv, int B, int T, int C);
  // The keys, copied to the host: (n_layer × n_head), to all-gather across ranks.
  std::vector<int32_t> keys() const;
  // into ← the elementwise max of into and other (keys of the same shape).
  static void merge(std::vector<int32_t>& into, const std::vector<int32_t>& other);
  // S_h of every head of `keys`, layer-major: (n_layer × n_head).
  static std::vector<float> values(const std::vector<int32_t>& keys);

 private:
  Backend& be_;
  int n_layer_, n_head_;
  Tensor keys_;  // i32 (n_layer × n_head), backend memory
};

// γ = fl32(√(τ / S)) in fp64 when S > τ, else exactly 1 (also for NaN S: the step's overflow
// handling decides what happens then).
float qk_clip_factor(float max_logit, double tau);

// Applies the factors of `max_logits` (n_layer × n_head, QkMaxLogits::values) to the weights:
// rows h·hs … (h+1)·hs − 1 of the Q block and of the K block of h.L.attn.qkv.w (3C, C), and the
// same entries of h.L.attn.qkv.b when the model has biases. Returns how many heads were clipped.
// weights: (flat_size) in `backend`'s memory, laid out as `layout`.
int apply_qk_clip(Backend& backend, float* weights, const std::vector<ParamView>& layout, const GPTConfig& model,
                  const std::vector<float>& max_logits, double tau);

}  // namespace sb
