// The GPT of docs/CORE.md: token + position embeddings, n_layer pre-norm blocks (LayerNorm or
// RMSNorm, causal multi-head attention, GELU MLP), final norm, LM head (tied or not), mean
// cross-entropy; manual backward (llm.c style). Written once against sb::Backend: it knows neither
// the device nor the world size. Leaves' gradients are summed exactly (rule 4) and rounded once.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/model/expert_group.hpp"
#include "samebits/core/model/tp_group.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/pipe_group.hpp"
#include "samebits/core/tensor.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

// Observer of each leaf's gradient (the trainer's leaf statistics, e.g. Σ_l ‖g_l‖²):
// (leaf index in the list given, the leaf's mean loss, its gradient: flat (flat_size), backend
// memory, valid during the call only).
using LeafObserver = std::function<void(size_t leaf, float loss, const float* grad)>;

// Expert parallelism's second way for a gradient to leave the model: a source rank's share of this
// rank's routed experts' gradients (grads: the model's flat gradient, in which the tensors
// `tensors` of params() hold it; valid during the call only), added where the leaf's gradient goes.
using GradientSink = std::function<void(const float* grads, const std::vector<size_t>& tensors)>;

// How accumulate_leaves runs each leaf beyond forward, backward and the add.
struct LeafPass {
  float loss_scale = 1.0f;  // backward's (fp16 loss scaling; a power of two, so exact)
  // Called between a leaf's forward and backward, with its index (the trainer's QK-clip reads the
  // leaf's attention inputs there).
  std::function<void(size_t leaf)> after_forward;
  LeafObserver on_leaf;  // called with each leaf's gradient, after its backward
  // When set: each leaf's per-tensor Σg² is added into it with the leaf's gradient
  // (GradAccumulator::add_leaves: one pass over the gradients on a CPU backend). Made by the
  // model's backend over its tensors (the trainer's leaf statistics).
  TensorSums* leaf_squares = nullptr;
  // Called before a leaf's forward (pipelined: and before its backward): the trace's leaf.
  std::function<void(size_t leaf)> before_forward;
};

class GPT {
 public:
  // Allocates parameters, gradients and activations for leaves of `leaf_size` sequences on
  // `backend` (which must outlive the model). Parameters start at zero: call init() or load them.
  // With a tensor-parallel group `tp` of more than one rank (docs/DISTRIBUTED.md §10) the model
  // holds this rank's shards (tp_layout()): params(), weights() and grads() are the local layout,
  // and forward/backward pass partial chains through the group so that every value is the one
  // of the unsplit model, bit for bit. tp must outlive the model.
  // With a pipeline group `pp` of more than one stage (docs/DISTRIBUTED.md §11) the model runs
  // its stage's blocks only (blocks()): the first stage the embedding, the last the final norm,
  // head and loss; it holds those tensors only (stage_holds: params() is the stage's layout, wte
  // on the last stage too when the head is tied).
  // forward and backward start from and end at the stage's boundary buffers (stage_input,
  // stage_output, stage_grad), which the schedule (pipeline_schedule.hpp) passes on. pp must
  // outlive the model.
  // With an expert-parallel group `ep` of more than one rank (docs/DISTRIBUTED.md §12) the model
  // holds its shard's routed experts only (ExpertShard; params() the shared tensors, then those):
  // a MoE block sends each routed row to its expert's rank and back (all-to-all), and computes the
  // rows its experts receive from every rank of the group, source by source, each source's rows by
  // the ops one process runs on them. An expert's weight gradient of another rank's rows goes to
  // the gradient sink (set_gradient_sink), its own rows' stays in grads(); the group's ranks run
  // their leaves in lockstep. ep must outlive the model.
  GPT(const GPTConfig& cfg, int leaf_size, Backend& backend, TpGroup* tp = nullptr, PipeGroup* pp = nullptr,
      ExpertGroup* ep = nullptr);
  ~GPT();
  GPT(const GPT&) = delete;
  GPT& operator=(const GPT&) = delete;

  const GPTConfig& config() const { return cfg_; }
  int leaf_size() const { return B_; }
  Backend& backend() { return be_; }

  const std::vector<ParamView>& params() const { return layout_; }
  // The tensor-parallel layout (size 1, local = full, without a group).
  const TpLayout& tp_layout() const { return tp_layout_; }
  const ParamView& param(std::string_view name) const;  // throws sb::Error for unknown names
  size_t flat_size() const { return flat_size_; }       // length of the flat buffers

  // Flat buffers (flat_size) f32 on the backend, aligned with params(): weights, and the
  // gradient of the last backward() (the leaf's mean-loss gradient, times loss_scale).
  Tensor& weights() { return weights_; }
  const Tensor& weights() const { return weights_; }
  Tensor& grads() { return grads_; }
  const Tensor& grads() const { return grads_; }
  // The next backward() writes into a second gradient buffer (allocated on first use, flat_size
  // floats more) and grads() is that one; the last backward()'s buffer keeps its values until the
  // swap after next. accumulate_leaves adds two leaves' gradients in one pass this way.
  void swap_gradients();

  // GPT-2 initialisation: element i of tensor `name` = init_std · det::philox_normal(seed,
  // det::stream_of(name), i) (one product), or its constant; padding zero.
  void init(uint64_t seed);

  // One leaf. tokens: host (leaf_size, seq_len + 1) int32; inputs are columns 0..T-1, targets
  // 1..T. Returns the leaf's mean loss over its leaf_size·T tokens: the exact sum (rule 5)
  // rounded to fp64, divided by the count in fp64, rounded to fp32 (reduce=native: a plain
  // float sum in token order, divided in fp32). Keeps the activations for backward().
  float forward(const int32_t* tokens);
  // Gradient of the last forward()'s mean loss, times loss_scale (a power of two), into grads().
  void backward(float loss_scale = 1.0f);
  // The exact sum of the last forward()'s per-token losses (for batch means and ranks).
  const det::ExactSum& loss_sum() const { return loss_sum_; }
  int64_t leaf_tokens() const { return static_cast<int64_t>(B_) * cfg_.seq_len; }
  // The last forward()'s per-token losses, host (leaf_size, seq_len).
  const std::vector<float>& token_losses() const { return losses_host_; }
  // The last forward()'s logits, backend memory (leaf_size, seq_len, vocab) f32; under a
  // tensor-parallel group this rank's vocabulary columns only, (leaf_size, seq_len, rows).
  const float* logits() const;
  // Bytes of the activations kept for backward and of backward's temporaries (one leaf's).
  size_t activation_bytes() const { return acts_.bytes() + scratch_.bytes(); }
  // The tensor-parallel chains pass in at most this many row chunks (default 4; 1: each segment
  // whole). Rows are independent outputs, so the count changes the latency, never a bit.
  void set_chain_chunks(int chunks) { chain_chunks_ = std::max(1, chunks); }
  // The last forward()'s q | k | v of block `layer` (one of blocks()), backend memory
  // (leaf_size, seq_len, 3C) f32.
  const float* attention_qkv(int layer) const;
  // The last forward()'s routing of Mixture-of-Experts block `layer` (one of blocks()), host
  // memory: each token's top-k experts in ascending index (leaf_size·seq_len, k), each routed
  // expert's selections (moe_experts), the leaf's load-balancing loss (with its coefficient) and
  // its tokens' router entropies summed exactly.
  const std::vector<int32_t>& moe_choices(int layer) const;
  const std::vector<int64_t>& moe_counts(int layer) const;
  double moe_aux_loss(int layer) const;
  const det::ExactSum& moe_entropy(int layer) const;
  // The last forward()'s input of MoE block `layer` (one of blocks()): its normed rows, backend
  // memory (leaf_size·seq_len, n_embd).
  const float* moe_input(int layer) const;
  // chosen (N, k) ← the top-k experts of MoE block `layer` (one of blocks()) for the rows x (host,
  // (N, n_embd), N = leaf_size·seq_len) under the router's current weights and bias: the forward's
  // routing of those values (the current slot's buffers serve as scratch).
  void moe_route(int layer, const float* x, std::vector<int32_t>& chosen);
  // model.moe_bias_rate: the auxiliary-loss-free biases of every MoE block of the model (all
  // stages'), block-major (MoE blocks × moe_experts); zeros until set.
  void set_moe_bias(const std::vector<float>& bias);
  // Under an expert-parallel group: where backward() puts the gradients of other ranks' rows
  // (accumulate_leaves and the pipeline schedule set it to their accumulator's add).
  void set_gradient_sink(GradientSink sink) { sink_ = std::move(sink); }
  ExpertGroup* experts() { return ep_; }  // null without a group of more than one rank

  // ---- pipeline stages (docs/DISTRIBUTED.md §11) ----
  StageBlocks blocks() const { return blocks_; }  // [0, n_layer) without a pipeline group
  PipeGroup* pipe() { return pp_; }               // null without one
  bool first_stage() const { return pp_ == nullptr || pp_->stage() == 0; }
  bool last_stage() const { return pp_ == nullptr || pp_->stage() == pp_->stages() - 1; }
  // n activation sets, one per micro-batch in flight (re-allocated: call between pipeline
  // flushes); use_slot(i) makes set i the one forward() and backward() use. One by default.
  void set_slots(int n);
  void use_slot(int i);
  int slots() const { return static_cast<int>(slot_buffers_.size()); }
  // The current slot's stage boundary, backend memory: the first block's input (N, C) (a stage
  // after the first receives it before forward), the last block's output (N, C) (sent on).
  float* stage_input();
  const float* stage_output() const;
  // The gradient message, backend memory (gradient_message(slot) floats): the residual stream's
  // gradient (N, C) at the stage boundary, then — tied head over several stages — the head's
  // gradient rows of the micro-batch's distinct input tokens (U, C), which the first stage's
  // embedding backward adds into, so that every element is summed in one process's order. A
  // stage before the last receives it before backward; after backward a stage after the first
  // sends it back. One buffer for every slot (a backward consumes it whole).
  float* stage_grad();
  size_t gradient_message(int slot) const;

 private:
  struct Layer;         // pointers of one block into the parameter, gradient and activation buffers
  struct Buffers;       // every block's Layer and the model-level pointers (gpt.cpp)
  struct MoeLayer;      // a Mixture-of-Experts block's tensors, buffers and routing (gpt_moe.hpp)
  void bind_buffers();  // acts_, scratch_ and every slot's Buffers
  // One slot's Buffers: its activations at acts (acts_size floats), its tokens (2, B, T) at tokens.
  void bind_slot(Buffers& b, float* acts, size_t acts_size, int32_t* tokens);
  // slot = the gradient of tensor `name` in grads_ (null when absent), recorded in grad_slots_.
  void bind_gradient(float*& slot, const std::string& name);
  void norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b);
  void norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                     const float* mean, const float* rstd);
  // Row-parallel linear forward (k = Cl, this rank's part of the input dimension in `groups` blocks):
  // the chain of out = inp·Wᵀ visits block 0 of ranks 0 … size-1, then block 1, …; the last adds
  // the bias and broadcasts (gpt_tp.cpp); under numerics.gemm = exact the ranks' integer dots are
  // summed instead (a k-split Backend::gemm).
  void row_forward(float* out, const float* inp, const float* w, const float* bias, int N, int Cl, int OC,
                   int groups = 1);
  // QK-norm's backward (Backend::qk_norm_backward) of this rank's heads; under a group the gains'
  // chains pass rank 0 → … → size-1, which broadcasts them.
  void qk_norm_backward(float* dqkv, float* dwq, float* dwk, const float* dout, const float* qkv, const float* wq,
                        const float* wk, const float* rstd, int N, int NH, int G);
  // A Mixture-of-Experts block (gpt_moe.cpp): its tensors' pointers and this slot's buffers; the
  // forward of x (N, C) into out (N, C): routing, the experts' rows, their combine; the backward of
  // dout into dx (N, C) (router's dinp, then each token's rows' dinp in slot order) and the
  // router's and experts' gradients.
  void bind_moe(MoeLayer& m, int layer);
  const MoeLayer& moe_layer(int layer) const;
  MoeLayer& moe_layer(int layer);
  void moe_forward(MoeLayer& m, int64_t layer, const float* x, float* out);
  void moe_backward(MoeLayer& m, int64_t layer, const float* x, const float* dout, float* dx, float loss_scale);
  // Expert xi (shared first, then routed) on n rows x (n, C): h (n, blocks·Fe), act (n, Fe), y (n,
  // C); its backward from dy (n, C) into its gradients (zeroed when n = 0), dact, dh and the rows'
  // dx (n, C). Traced at "h.L.moe.eN" / "h.L.moe.sN".
  void expert_forward(int64_t layer, int xi, int n, const float* x, float* h, float* act, float* y);
  void expert_backward(int64_t layer, int xi, int n, const float* dy, const float* x, const float* h, const float* act,
                       float* dact, float* dh, float* dx);
  // Expert parallelism (gpt_moe_ep.cpp): the routed rows of m.xe to their experts' ranks, this
  // rank's experts on every source's rows, the outputs back into m.y; the backward likewise from
  // dy into dxe, the other sources' weight gradients to the sink.
  void moe_remote_forward(MoeLayer& m, int64_t layer);
  void moe_remote_backward(MoeLayer& m, int64_t layer, const float* dy, float* dxe);
  // The routing of a leaf's N tokens x (N, C, backend memory) with block `layer`'s router and
  // bias: m's logits, scores, chosen experts and gates.
  void moe_route_tokens(MoeLayer& m, int layer, const float* x);
  // Column-parallel linear backward (this rank's OCl of OC output columns in `groups` blocks): dw,
  // dbias local; the chain of dinp = dout·W visits block 0 of ranks 0 … size-1, then block 1, … ;
  // under numerics.gemm = exact the ranks' integer dots over their OCl columns are summed.
  void col_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                    int C, int OCl, int OC, int groups);
  // Vocabulary-parallel embedding forward, out (N, C): the buffer passes rank 0 → … → size-1, each
  // writing the rows of its vocabulary's tokens; the last broadcasts.
  void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe);
  // The cross-entropy's per-token losses (N) and row statistics (N, 2) of the logits: under a
  // group, of this rank's columns (N, rows), with the row max (max, (N)) and the denominator's 32
  // lane partials and the target logit (part, (N, kXentPart)) passed rank to rank in column order
  // (gpt_tp.cpp); targets (N) are relative to this rank's first vocabulary row.
  void loss_forward(float* losses, float* stats, float* max, float* part, const float* logits, const int32_t* targets);
  // The tied head's gradient rows of the current slot's tokens (stage_grad's tail): taken out of
  // dwte on the last stage, put into the zeroed dwte on the first.
  void take_tied_rows(float* dwte);
  void put_tied_rows(float* dwte);
  bool passes_tied_rows() const { return pp_ != nullptr && cfg_.tied_head && pp_->stages() > 1; }
  size_t message_floats() const;     // stage_grad's capacity
  float* wp(std::string_view name);  // weights_ of a tensor (null when absent)
  float* gp(std::string_view name);  // grads_ of a tensor (null when absent)

  GPTConfig cfg_;
  int B_;
  Backend& be_;
  TpGroup* tp_ = nullptr;  // null unless the group has more than one rank
  TpLayout tp_layout_;
  VocabRows vocab_rows_;                             // the rows of wte (and lm_head.w) this rank holds
  TpSplit vocab_split_;                              // their split (sharded only under a group)
  PipeGroup* pp_ = nullptr;                          // null unless the group has more than one stage
  ExpertGroup* ep_ = nullptr;                        // null unless the group has more than one rank
  std::vector<std::vector<size_t>> expert_tensors_;  // under ep_: (layers) params()' routed expert tensors
  GradientSink sink_;
  Tensor ep_scratch_;     // under ep_: the received rows' backward temporaries (gpt_moe_ep.cpp)
  StageBlocks blocks_;    // this stage's blocks
  int chain_chunks_ = 4;  // set_chain_chunks
  std::vector<ParamView> layout_;
  size_t flat_size_ = 0;
  Tensor weights_, grads_;
  Tensor spare_grads_;  // swap_gradients()'s other buffer (empty until then)
  // Every gradient pointer of buf_ and its offset in the flat buffer (-1: absent): swap_gradients
  // re-points them without looking the tensors up again.
  std::vector<std::pair<float**, ptrdiff_t>> grad_slots_;
  Tensor acts_;                  // all forward activations, one allocation (see gpt.cpp for the layout)
  Tensor scratch_;               // backward temporaries
  Tensor native_mean_;           // (1) reduce=native's leaf loss, computed by the backend
  Tensor tokens_;                // (slots, 2, B, T) i32: inputs, then targets
  Tensor rope_;                  // model.pos = rope: (T, head size / 2, 2) the rotations' (cos, sin); else empty
  Tensor moe_scratch_;           // MoE blocks' backward temporaries (gpt_moe.cpp), shared by the slots
  std::vector<float> moe_bias_;  // (MoE blocks × moe_experts) set_moe_bias
  std::vector<std::unique_ptr<Buffers>> slot_buffers_;  // (slots) one activation set each
  Buffers* buf_ = nullptr;                              // the current slot's
  int slot_ = 0;
  // A traced pipeline (set_slots under a tracer) passes every row of the tied head's gradient, so
  // that the first stage's embedding backward reads one process's whole dwte: its trace row is
  // the one-process row (docs/TRACE.md); the sums are the same either way.
  bool traced_rows_ = false;
  std::vector<std::vector<int32_t>> tied_rows_;  // (slots) passes_tied_rows(): the local wte rows of
                                                 // the slot's distinct input tokens, ascending
  std::vector<float> losses_host_;               // (B, T)
  det::ExactSum loss_sum_;
};

// ---- batches of leaves (rule 4) ---------------------------------------------------------------
// The batch gradient is the mean over leaves of each leaf's mean-loss gradient:
//   g = fl( fl(Σ_l g_l) / L ),  L = total leaves of the global batch,
// where Σ is exact (the accumulator) and rounded once, then one IEEE division (exact when L is a
// power of two). Every leaf holds the same token count, so g is the gradient of the mean loss over
// all tokens. The value is independent of the leaves' order, their split across calls and ranks,
// and the thread count.

// For each leaf in order: forward, pass.after_forward, backward(pass.loss_scale), pass.on_leaf
// with its gradient, which goes into acc (not cleared here) and pass.leaf_squares — two leaves'
// at a time (GradAccumulator::add_leaves: the same sums as one by one, in half the passes); the
// per-token losses are merged exactly into loss_sum. The one leaf loop: the trainer's step and
// batch_gradient below both run it. leaves: host pointers, each (leaf_size, seq_len + 1) int32.
void accumulate_leaves(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc,
                       det::ExactSum& loss_sum, const LeafPass& pass = {});

// The sink of an expert-parallel model (GPT::set_gradient_sink) that adds into acc, and into
// squares when given (the leaf statistics' per-tensor Σg²), what add_leaves adds of a leaf: set by
// accumulate_leaves and the pipeline schedule (acc and squares must outlive the pass).
GradientSink accumulator_sink(const GPT& model, GradAccumulator& acc, TensorSums* squares);

// The mean loss of `tokens` tokens whose per-token losses sum (exactly) to loss_sum: rounded to
// fp64, divided in fp64, rounded to fp32.
float mean_loss(const det::ExactSum& loss_sum, int64_t tokens);

// One global batch on one process: clears acc, accumulates every leaf, rounds into grad_out
// (flat (flat_size), backend memory) dividing by leaves.size(); returns the batch mean loss.
float batch_gradient(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc, float* grad_out,
                     const LeafObserver& on_leaf = {});

}  // namespace sb
