// GPT forward and backward (llm.c style), written once against sb::Backend: the model chooses
// the op sequence and buffers, the backend the order of every reduction (docs/CONTRACT.md). The
// leaf's mean loss is an exact sum (rule 5); leaves are combined exactly by the caller's
// GradAccumulator (rule 4, see accumulate_leaves).
#include "samebits/core/model/gpt.hpp"

#include <algorithm>

#include <limits>
#include <utility>
#include "gpt_moe.hpp"

#include "samebits/core/ops/rope.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/hd.hpp"
#include "samebits/det/philox.hpp"

namespace sb {

// Pointers of one block. Parameters and gradients point into the flat buffers; activations
// (B·T = N rows) into acts_. Biases are null without model.bias, norm biases also under RMSNorm.
struct GPT::Layer {
  const float *ln1w, *ln1b, *qkvw, *qkvb, *qnw, *knw, *projw, *projb, *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
  float *dln1w, *dln1b, *dqkvw, *dqkvb, *dqnw, *dknw, *dprojw, *dprojb, *dln2w, *dln2b, *dfcw, *dfcb, *dfc2w, *dfc2b;
  const float* input;                // (N, C) the residual stream entering the block
  float *ln1, *ln1_mean, *ln1_rstd;  // (N, C), (N), (N)
  float* qkv;                        // (N, W) the qkv product: 3C wide, or (NH + 2G)·hd under GQA
  float *qkn, *qk_rstd;              // QK-norm: (N, W) the normed rows, (N, NH + G)
  float* heads;                      // (N, 3C) the [q | k | v] rows attention reads: qkv, qkn or their copy
  float* atty;                       // (N, C) attention output before the projection
  float* att;                        // (B, NH, T, T) softmax probabilities
  float* attproj;                    // (N, C)
  float* res2;                       // (N, C) input + attproj
  float *ln2, *ln2_mean, *ln2_rstd;  // (N, C), (N), (N)
  float* fch;                        // (N, F), SwiGLU (N, 2F): the fc output
  float* fch_gelu;                   // (N, F): the activation's (GELU's or SwiGLU's) output
  float* fcproj;                     // (N, C)
  float* res3;                       // (N, C) res2 + fcproj: the block's output
};

struct GPT::Buffers {
  std::vector<Layer> layers;
  std::vector<std::unique_ptr<MoeLayer>> moe;    // (layers) a Mixture-of-Experts block's, else null
  const float *wte, *wpe, *lnfw, *lnfb, *headw;  // headw is wte when tied
  float *dwte, *dwpe, *dlnfw, *dlnfb, *dheadw;
  int32_t *inputs, *targets;         // (B, T) each
  float* encoded;                    // (N, C)
  float *lnf, *lnf_mean, *lnf_rstd;  // (N, C), (N), (N)
  float* logits;                     // (N, V): V = this rank's vocabulary rows under a group
  float* losses;                     // (N)
  float* xstats;                     // (N, 2): row max, denominator
  float *xmax, *xpart;               // under a group: (N), (N, kXentPart) passed rank to rank
  // backward temporaries
  float* dres;           // (N, C) gradient of the residual stream, then the tied rows (stage_grad)
  float *dbtc1, *dbtc2;  // (N, C)
  float* dqkv;           // (N, 3C)
  float* dqkv_rows;      // (N, W): GQA's and QK-norm's gradient of the qkv product's rows
  float* datt;           // (B, NH, T, T)
  float *dff1, *dff2;    // (N, F), (N, F) or SwiGLU's (N, 2F)
  float* dlogits;        // (N, V)
};

namespace {
size_t aligned(size_t n) { return (n + kParamAlign - 1) / kParamAlign * kParamAlign; }
// The split of the layout's vocabulary rows (wte, or lm_head.w): unsharded when it holds neither.
TpSplit vocab_split(const TpLayout& layout) {
  for (size_t t = 0; t < layout.local.size(); ++t)
    if (layout.local[t].name == "wte" || layout.local[t].name == "lm_head.w") return layout.splits[t];
  return {};
}
}  // namespace

GPT::GPT(const GPTConfig& cfg, int leaf_size, Backend& backend, TpGroup* tp, PipeGroup* pp, ExpertGroup* ep)
    : cfg_(cfg),
      B_(leaf_size),
      be_(backend),
      tp_(tp != nullptr && tp->size() > 1 ? tp : nullptr),
      tp_layout_(gpt_tp_layout(cfg, tp_ ? tp_->size() : 1, tp_ ? tp_->rank() : 0, pp != nullptr ? pp->stages() : 1,
                               pp != nullptr ? pp->stage() : 0,
                               ep != nullptr ? ExpertShard{ep->size(), ep->rank()} : ExpertShard{})),
      pp_(pp != nullptr && pp->stages() > 1 ? pp : nullptr),
      ep_(ep != nullptr && ep->size() > 1 ? ep : nullptr),
      blocks_(stage_blocks(cfg, pp_ ? pp_->stages() : 1, pp_ ? pp_->stage() : 0)),
      layout_(tp_layout_.local) {
  if (ep_ != nullptr) expert_tensors_.resize(size_t(cfg.n_layer));
  for (size_t t = 0; ep_ != nullptr && t < layout_.size(); ++t)
    if (routed_expert_of(layout_[t].name) >= 0)
      expert_tensors_[size_t(std::stoi(layout_[t].name.substr(2)))].push_back(t);
  // The vocabulary rows of this rank: the embedding's, or the head's on a last stage. A middle
  // pipeline stage holds neither, yet passes the tied rows of this rank's rows between its ends:
  // it takes the split of the unstaged layout, which its first and last stage hold.
  vocab_split_ = vocab_split(tp_layout_);
  if (!vocab_split_.sharded && pp_ != nullptr && tp_ != nullptr)
    vocab_split_ = vocab_split(gpt_tp_layout(cfg, tp_layout_.size, tp_layout_.rank));
  const int r = tp_layout_.rank;
  vocab_rows_ = vocab_split_.sharded
                    ? VocabRows{int(vocab_split_.first(r)), int(vocab_split_.first(r) + vocab_split_.rows(r))}
                    : VocabRows{0, cfg.vocab};
  SB_CHECK(leaf_size >= 1, "data.leaf_size=", leaf_size, " must be at least 1");
  for (const ParamView& p : layout_) flat_size_ = std::max(flat_size_, p.offset + aligned(p.numel));
  weights_ = be_.alloc(DType::f32, {static_cast<int64_t>(flat_size_)});
  grads_ = be_.alloc(DType::f32, {static_cast<int64_t>(flat_size_)});
  losses_host_.assign(static_cast<size_t>(leaf_tokens()), 0.0f);
  if (cfg.pos == PosKind::rope) {  // the rotations of every position, once (ops/rope.hpp)
    const int T = cfg.seq_len, hd = cfg.n_embd / cfg.n_head;
    const auto theta = static_cast<float>(cfg.rope_theta);
    std::vector<float> table(size_t(T) * size_t(hd));  // (T, hd/2, 2)
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < hd / 2; ++i) {
        table[size_t(t) * hd + 2 * size_t(i)] = ops::rope_cos(t, i, hd, theta);
        table[size_t(t) * hd + 2 * size_t(i) + 1] = ops::rope_sin(t, i, hd, theta);
      }
    rope_ = be_.alloc(DType::f32, {static_cast<int64_t>(table.size())});
    be_.copy_from_host(rope_.data(), table.data(), table.size() * sizeof(float));
  }
  set_slots(1);
}

GPT::~GPT() = default;

const ParamView& GPT::param(std::string_view name) const {
  for (const ParamView& p : layout_)
    if (p.name == name) return p;
  SB_FAIL("the model has no parameter tensor named '", name, "'");
}

const float* GPT::logits() const {
  SB_CHECK(last_stage(), "the logits are on the last pipeline stage");
  return buf_->logits;
}
const float* GPT::attention_qkv(int layer) const {
  SB_CHECK(layer >= blocks_.first && layer < blocks_.end, "block ", layer, " is not on this pipeline stage (blocks ",
           blocks_.first, "…", blocks_.end - 1, ")");
  return buf_->layers.at(static_cast<size_t>(layer - blocks_.first)).qkv;
}

const GPT::MoeLayer& GPT::moe_layer(int layer) const {
  SB_CHECK(layer >= blocks_.first && layer < blocks_.end && cfg_.moe_block(layer), "block ", layer,
           " is not a Mixture-of-Experts block of this pipeline stage");
  return *buf_->moe.at(static_cast<size_t>(layer - blocks_.first));
}
GPT::MoeLayer& GPT::moe_layer(int layer) { return const_cast<MoeLayer&>(std::as_const(*this).moe_layer(layer)); }
const std::vector<int32_t>& GPT::moe_choices(int layer) const { return moe_layer(layer).chosen; }
const std::vector<int64_t>& GPT::moe_counts(int layer) const { return moe_layer(layer).counts; }
double GPT::moe_aux_loss(int layer) const { return moe_layer(layer).aux_loss; }
const det::ExactSum& GPT::moe_entropy(int layer) const { return moe_layer(layer).entropy; }

void GPT::set_slots(int n) {
  SB_CHECK(n >= 1, "activation slots: ", n, " must be at least 1");
  const bool traced = be_.tracer() != nullptr;
  if (n == slots() && traced == traced_rows_) return;
  traced_rows_ = traced;
  slot_buffers_.resize(static_cast<size_t>(n));
  tied_rows_.assign(static_cast<size_t>(n), {});
  tokens_ = be_.alloc(DType::i32, {2 * int64_t{n}, B_, cfg_.seq_len});
  bind_buffers();
  use_slot(0);
}

void GPT::use_slot(int i) {
  SB_CHECK(i >= 0 && i < slots(), "activation slot ", i, " outside [0, ", slots(), ")");
  slot_ = i;
  buf_ = slot_buffers_[static_cast<size_t>(i)].get();
}

float* GPT::stage_input() { return buf_->encoded; }
const float* GPT::stage_output() const { return buf_->layers.back().res3; }
float* GPT::stage_grad() { return buf_->dres; }

size_t GPT::message_floats() const {
  const size_t N = static_cast<size_t>(B_) * cfg_.seq_len, C = static_cast<size_t>(cfg_.n_embd);
  if (!passes_tied_rows()) return N * C;
  return (N + (traced_rows_ ? static_cast<size_t>(vocab_rows_.count()) : N)) * C;
}

size_t GPT::gradient_message(int slot) const {
  const size_t rows = tied_rows_.at(static_cast<size_t>(slot)).size();
  return (static_cast<size_t>(B_) * cfg_.seq_len + rows) * static_cast<size_t>(cfg_.n_embd);
}

void GPT::take_tied_rows(float* dwte) {
  const size_t C = static_cast<size_t>(cfg_.n_embd);
  float* rows = buf_->dres + static_cast<size_t>(B_) * cfg_.seq_len * C;  // (U, C)
  const std::vector<int32_t>& u = tied_rows_[static_cast<size_t>(slot_)];
  for (size_t i = 0; i < u.size(); ++i) {
    be_.copy(rows + i * C, dwte + size_t(u[i]) * C, C * sizeof(float));
    be_.zero(dwte + size_t(u[i]) * C, C * sizeof(float));
  }
}

void GPT::put_tied_rows(float* dwte) {
  const size_t C = static_cast<size_t>(cfg_.n_embd);
  const float* rows = buf_->dres + static_cast<size_t>(B_) * cfg_.seq_len * C;  // (U, C)
  const std::vector<int32_t>& u = tied_rows_[static_cast<size_t>(slot_)];
  for (size_t i = 0; i < u.size(); ++i) be_.copy(dwte + size_t(u[i]) * C, rows + i * C, C * sizeof(float));
}

float* GPT::wp(std::string_view name) {
  for (const ParamView& p : layout_)
    if (p.name == name) return weights_.data_as<float>() + p.offset;
  return nullptr;
}

float* GPT::gp(std::string_view name) {
  for (const ParamView& p : layout_)
    if (p.name == name) return grads_.data_as<float>() + p.offset;
  return nullptr;
}

// acts_ holds per slot, each piece on a kParamAlign boundary (N = B·T): encoded (N, C) · per
// block of the stage the Layer activations in declaration order · on the last stage lnf (N, C)
// · lnf_mean (N) · lnf_rstd (N) · logits (N, V) · losses (N) · xstats (N, 2). scratch_ holds the
// Buffers backward temporaries, one set for every slot (dres followed by the tied rows (N, C)).
// Under tensor parallelism (size S) the head-split activations are this rank's: qkv (N, 3C/S),
// atty (N, C/S), att (B, NH/S, T, T), fch (N, blocks·F/S) and fch_gelu (N, F/S), logits and dlogits (N, V) of
// its V vocabulary rows; xmax (N) and xpart (N, kXentPart) follow xstats; the rest is replicated.
void GPT::bind_buffers() {
  const size_t S = static_cast<size_t>(tp_layout_.size);
  const size_t N = static_cast<size_t>(B_) * cfg_.seq_len, C = cfg_.n_embd, V = size_t(vocab_rows_.count());
  const size_t xent = S > 1 ? aligned(N) + aligned(N * ops::kXentPart) : 0;
  const size_t CA = C / S, F = size_t(cfg_.ffn()) / S;  // this rank's attention and MLP widths
  const size_t FC = size_t(cfg_.fc_blocks()) * F;       // its fc output: SwiGLU's gate and up halves
  const size_t W = size_t(cfg_.qkv_rows()) / S;         // its qkv product's width
  const size_t TT = static_cast<size_t>(B_) * (cfg_.n_head / S) * cfg_.seq_len * cfg_.seq_len;
  const size_t qk_norm = cfg_.qk_norm ? aligned(N * W) + aligned(N * (size_t(cfg_.n_head + cfg_.kv_heads()) / S)) : 0;
  const size_t per_layer = 8 * aligned(N * C) + aligned(N * W) + qk_norm + (cfg_.gqa() ? aligned(N * 3 * CA) : 0) +
                           aligned(TT) + aligned(N * FC) + aligned(N * F) + 4 * aligned(N);
  const bool head = last_stage();
  const size_t layers = static_cast<size_t>(blocks_.end - blocks_.first), slots = slot_buffers_.size();
  const size_t acts = aligned(N * C) + layers * per_layer +
                      (head ? aligned(N * C) + 3 * aligned(N) + aligned(N * V) + aligned(2 * N) + xent : 0);
  const size_t dres = message_floats();  // the gradient message
  const size_t rows_grad = cfg_.gqa() || cfg_.qk_norm ? aligned(N * W) : 0;
  const size_t scratch = aligned(dres) + 2 * aligned(N * C) + aligned(N * 3 * CA) + rows_grad + aligned(TT) +
                         aligned(N * F) + aligned(N * FC) + (head ? aligned(N * V) : 0);
  acts_ = be_.alloc(DType::f32, {static_cast<int64_t>(slots * acts)});
  scratch_ = be_.alloc(DType::f32, {static_cast<int64_t>(scratch)});
  native_mean_ = be_.alloc(DType::f32, {1});
  grad_slots_.clear();
  for (size_t k = 0; k < slots; ++k) {
    slot_buffers_[k] = std::make_unique<Buffers>();
    bind_slot(*slot_buffers_[k], acts_.data_as<float>() + k * acts, acts, tokens_.data_as<int32_t>() + k * 2 * N);
  }
}

void GPT::bind_slot(Buffers& b, float* acts, size_t acts_size, int32_t* tokens) {
  const size_t S = static_cast<size_t>(tp_layout_.size);
  const size_t N = static_cast<size_t>(B_) * cfg_.seq_len, C = cfg_.n_embd, V = size_t(vocab_rows_.count());
  const size_t CA = C / S, F = size_t(cfg_.ffn()) / S;  // this rank's attention and MLP widths
  const size_t FC = size_t(cfg_.fc_blocks()) * F;
  const size_t W = size_t(cfg_.qkv_rows()) / S, heads = size_t(cfg_.n_head + cfg_.kv_heads()) / S;
  const size_t TT = static_cast<size_t>(B_) * (cfg_.n_head / S) * cfg_.seq_len * cfg_.seq_len;
  const size_t scratch = static_cast<size_t>(scratch_.numel());
  float* cursor = acts;
  auto take = [&cursor](size_t n) {
    float* p = cursor;
    cursor += aligned(n);
    return p;
  };
  b.wte = wp("wte"), b.wpe = wp("wpe"), b.lnfw = wp("lnf.w"), b.lnfb = wp("lnf.b");
  bind_gradient(b.dwte, "wte"), bind_gradient(b.dwpe, "wpe"), bind_gradient(b.dlnfw, "lnf.w");
  bind_gradient(b.dlnfb, "lnf.b");
  b.headw = cfg_.tied_head ? b.wte : wp("lm_head.w");
  bind_gradient(b.dheadw, cfg_.tied_head ? "wte" : "lm_head.w");
  b.inputs = tokens;
  b.targets = b.inputs + N;
  b.encoded = take(N * C);
  b.layers.assign(static_cast<size_t>(blocks_.end - blocks_.first), Layer{});
  // Each block's tensors: the name after "h.<l>.", their weight and gradient pointers.
  static constexpr struct {
    const char* name;
    const float* Layer::*w;
    float* Layer::*g;
  } kTensors[] = {{"ln1.w", &Layer::ln1w, &Layer::dln1w},         {"ln1.b", &Layer::ln1b, &Layer::dln1b},
                  {"attn.qkv.w", &Layer::qkvw, &Layer::dqkvw},    {"attn.qkv.b", &Layer::qkvb, &Layer::dqkvb},
                  {"attn.q_norm.w", &Layer::qnw, &Layer::dqnw},   {"attn.k_norm.w", &Layer::knw, &Layer::dknw},
                  {"attn.proj.w", &Layer::projw, &Layer::dprojw}, {"attn.proj.b", &Layer::projb, &Layer::dprojb},
                  {"ln2.w", &Layer::ln2w, &Layer::dln2w},         {"ln2.b", &Layer::ln2b, &Layer::dln2b},
                  {"mlp.fc.w", &Layer::fcw, &Layer::dfcw},        {"mlp.fc.b", &Layer::fcb, &Layer::dfcb},
                  {"mlp.proj.w", &Layer::fc2w, &Layer::dfc2w},    {"mlp.proj.b", &Layer::fc2b, &Layer::dfc2b}};
  const float* input = b.encoded;
  for (int l = blocks_.first; l < blocks_.end; ++l) {
    Layer& L = b.layers[static_cast<size_t>(l - blocks_.first)];
    const std::string h = "h." + std::to_string(l) + ".";
    for (const auto& t : kTensors) {
      L.*t.w = wp(h + t.name);
      bind_gradient(L.*t.g, h + t.name);
    }
    L.input = input;
    L.ln1 = take(N * C), L.ln1_mean = take(N), L.ln1_rstd = take(N);
    L.qkv = take(N * W);
    L.qkn = cfg_.qk_norm ? take(N * W) : nullptr;
    L.qk_rstd = cfg_.qk_norm ? take(N * heads) : nullptr;
    L.heads = cfg_.gqa() ? take(N * 3 * CA) : cfg_.qk_norm ? L.qkn : L.qkv;
    L.atty = take(N * CA);
    L.att = take(TT);
    L.attproj = take(N * C);
    L.res2 = take(N * C);
    L.ln2 = take(N * C), L.ln2_mean = take(N), L.ln2_rstd = take(N);
    L.fch = take(N * FC);
    L.fch_gelu = take(N * F);
    L.fcproj = take(N * C);
    L.res3 = take(N * C);
    input = L.res3;
  }
  b.moe.resize(b.layers.size());
  for (int l = blocks_.first; l < blocks_.end; ++l) {
    if (!cfg_.moe_block(l)) continue;
    b.moe[size_t(l - blocks_.first)] = std::make_unique<MoeLayer>();
    bind_moe(*b.moe[size_t(l - blocks_.first)], l);
  }
  if (last_stage()) {
    b.lnf = take(N * C), b.lnf_mean = take(N), b.lnf_rstd = take(N);
    b.logits = take(N * V);
    b.losses = take(N);
    b.xstats = take(2 * N);
    if (S > 1) b.xmax = take(N), b.xpart = take(N * ops::kXentPart);
  }
  SB_CHECK(cursor <= acts + acts_size, "activation layout overflows its buffer");
  cursor = scratch_.data_as<float>();
  b.dres = take(message_floats()), b.dbtc1 = take(N * C), b.dbtc2 = take(N * C);
  b.dqkv = take(N * 3 * CA);
  b.dqkv_rows = cfg_.gqa() || cfg_.qk_norm ? take(N * W) : nullptr;
  b.datt = take(TT);
  b.dff1 = take(N * F), b.dff2 = take(N * FC);
  if (last_stage()) b.dlogits = take(N * V);
  SB_CHECK(cursor <= scratch_.data_as<float>() + scratch, "scratch layout overflows its buffer");
}

void GPT::bind_gradient(float*& slot, const std::string& name) {
  slot = gp(name);
  grad_slots_.push_back({&slot, slot == nullptr ? -1 : slot - grads_.data_as<float>()});
}

// Both buffers come zero-filled from alloc, and backward() writes every tensor whole (dwte of an
// untied head zeroed first), so which one a leaf's backward finds cannot change a value.
void GPT::swap_gradients() {
  if (spare_grads_.data() == nullptr) spare_grads_ = be_.alloc(DType::f32, {static_cast<int64_t>(flat_size_)});
  std::swap(grads_, spare_grads_);
  float* const flat = grads_.data_as<float>();
  for (const auto& [slot, offset] : grad_slots_) *slot = offset < 0 ? nullptr : flat + offset;
}

// Every element is a pure function of (seed, tensor name, index) (Philox counters), so the
// threads of the parallel loop cannot change a bit (tests/unit/test_model.cpp: 1..4 threads); a
// tensor-parallel shard takes each element's index in the full tensor.
void GPT::init(uint64_t seed) {
  // A CPU backend's weights are host memory: filled in place; any other is staged on the host.
  std::vector<float> staging;
  if (be_.device() != Device::cpu) staging.assign(flat_size_, 0.0f);
  float* flat = staging.empty() ? weights_.data_as<float>() : staging.data();
  size_t end = 0;  // end of the previous tensor: the alignment padding up to the next is zero
  for (size_t t = 0; t < layout_.size(); ++t) {
    const ParamView& p = layout_[t];
    std::fill(flat + end, flat + p.offset, 0.0f);
    float* dst = flat + p.offset;  // (numel)
    end = p.offset + p.numel;
    if (p.init_std == 0.0f) {
      std::fill(dst, dst + p.numel, p.init_value);
      continue;
    }
    const uint64_t stream = det::stream_of(p.name);
    const float init_std = p.init_std;
    const TpSplit& split = tp_layout_.splits[t];
    if (split.sharded) {
      const int r = tp_layout_.rank;
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < static_cast<int64_t>(p.numel); ++j) {
        const size_t full = tp_full_index(split, r, static_cast<size_t>(j));
        dst[j] = init_std * det::philox_normal(seed, stream, full);
      }
      continue;
    }
    constexpr int64_t kPiece = 4096;  // even: each piece starts a pair of elements
    const int64_t n = static_cast<int64_t>(p.numel), pieces = (n + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(static) if (pieces > 1)
    for (int64_t k = 0; k < pieces; ++k) {
      const int64_t first = k * kPiece, count = std::min(kPiece, n - first);
      det::philox_normal_fill(seed, stream, static_cast<uint64_t>(first), static_cast<uint64_t>(count), init_std,
                              dst + first);
    }
  }
  std::fill(flat + end, flat + flat_size_, 0.0f);
  if (!staging.empty()) be_.copy_from_host(weights_.data(), staging.data(), flat_size_ * sizeof(float));
}

void GPT::norm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd;
  if (cfg_.norm == NormKind::layernorm) be_.layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  else be_.rmsnorm_forward(out, rstd, inp, w, N, C);
}

void GPT::norm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                        const float* mean, const float* rstd) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd;
  if (cfg_.norm == NormKind::layernorm) be_.layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  else be_.rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
}

float GPT::forward(const int32_t* tokens) {
  const int B = B_, T = cfg_.seq_len, C = cfg_.n_embd, V = cfg_.vocab, S = tp_layout_.size;
  const int NH = cfg_.n_head / S, CA = C / S, F = int(cfg_.ffn()) / S;  // this rank's heads and widths
  const int FC = int(cfg_.fc_blocks()) * F, G = cfg_.kv_heads() / S, W = int(cfg_.qkv_rows()) / S;
  const int hd = cfg_.head_dim(), q_blocks = cfg_.n_head / cfg_.kv_heads();
  const int N = B * T;
  Buffers& b = *buf_;
  // Inputs are columns 0..T-1 of each row, targets 1..T (as columns of this rank's logits: minus
  // its first vocabulary row).
  std::vector<int32_t> split(2 * static_cast<size_t>(N));  // (2, B, T)
  for (int s = 0; s < B; ++s) {
    const int32_t* row = tokens + static_cast<size_t>(s) * (T + 1);
    for (int t = 0; t <= T; ++t)
      SB_CHECK(row[t] >= 0 && row[t] < V, "token ", row[t], " (sequence ", s, ", position ", t,
               ") is outside the model's vocabulary [0, ", V, "); check model.vocab");
    std::copy(row, row + T, split.begin() + static_cast<ptrdiff_t>(s) * T);
    for (int t = 0; t < T; ++t) split[size_t(N) + size_t(s) * T + t] = row[t + 1] - vocab_rows_.begin;
  }
  be_.copy_from_host(b.inputs, split.data(), split.size() * sizeof(int32_t));
  if (passes_tied_rows()) {  // the distinct input tokens of this rank's vocabulary rows, ascending
    std::vector<int32_t>& rows = tied_rows_[static_cast<size_t>(slot_)];
    rows.clear();
    for (int i = 0; i < N && !traced_rows_; ++i)
      if (split[size_t(i)] >= vocab_rows_.begin && split[size_t(i)] < vocab_rows_.end)
        rows.push_back(split[size_t(i)] - vocab_rows_.begin);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    for (int32_t r = 0; r < vocab_rows_.count() && traced_rows_; ++r) rows.push_back(r);
  }

  // Each op under its call site (trace.hpp): nothing but a pointer test unless a trace records.
  if (first_stage()) {
    const trace::Scope s(be_, "wte+wpe embedding forward");
    embedding_forward(b.encoded, b.inputs, b.wte, b.wpe);
  }
  for (size_t l = 0; l < b.layers.size(); ++l) {
    Layer& L = b.layers[l];
    const int64_t layer = blocks_.first + int64_t(l);
    const auto at = [&](const char* site) { return trace::Scope(be_, "h.", layer, site); };
    {
      const auto s = at(".ln1 norm forward");
      norm_forward(L.ln1, L.ln1_mean, L.ln1_rstd, L.input, L.ln1w, L.ln1b);
    }
    {
      const auto s = at(".attn.qkv matmul forward");
      be_.matmul_forward(L.qkv, L.ln1, L.qkvw, L.qkvb, N, C, W);
    }
    if (cfg_.qk_norm) {
      const auto s = at(".attn qk_norm forward");
      be_.qk_norm_forward(L.qkn, L.qk_rstd, L.qkv, L.qnw, L.knw, N, NH, G, hd);
    }
    if (cfg_.gqa()) {
      const auto s = at(".attn kv_repeat forward");
      be_.kv_repeat_forward(L.heads, cfg_.qk_norm ? L.qkn : L.qkv, N, NH, G, hd);
    }
    if (cfg_.pos == PosKind::rope) {
      const auto s = at(".attn rope forward");
      be_.rope_forward(L.heads, rope_.data_as<float>(), B, T, CA, NH);
    }
    {
      const auto s = at(".attn attention forward");
      be_.attention_forward(L.atty, L.att, L.heads, B, T, CA, NH);
    }
    {
      const auto s = at(".attn.proj matmul forward");
      row_forward(L.attproj, L.atty, L.projw, L.projb, N, CA, C, q_blocks);
    }
    {
      const auto s = at(".attn residual forward");
      be_.residual_forward(L.res2, L.input, L.attproj, static_cast<int64_t>(N) * C);
    }
    {
      const auto s = at(".ln2 norm forward");
      norm_forward(L.ln2, L.ln2_mean, L.ln2_rstd, L.res2, L.ln2w, L.ln2b);
    }
    if (b.moe[l] != nullptr) {
      moe_forward(*b.moe[l], layer, L.ln2, L.fcproj);
    } else {
      {
        const auto s = at(".mlp.fc matmul forward");
        be_.matmul_forward(L.fch, L.ln2, L.fcw, L.fcb, N, C, FC);
      }
      if (cfg_.mlp == MlpKind::swiglu) {
        const auto s = at(".mlp swiglu forward");
        be_.swiglu_forward(L.fch_gelu, L.fch, N, F);
      } else {
        const auto s = at(".mlp gelu forward");
        be_.gelu_forward(L.fch_gelu, L.fch, static_cast<int64_t>(N) * F);
      }
      const auto s = at(".mlp.proj matmul forward");
      row_forward(L.fcproj, L.fch_gelu, L.fc2w, L.fc2b, N, F, C);
    }
    {
      const auto s = at(".mlp residual forward");
      be_.residual_forward(L.res3, L.res2, L.fcproj, static_cast<int64_t>(N) * C);
    }
  }
  if (!last_stage()) {  // the loss is the last stage's
    loss_sum_.clear();
    return std::numeric_limits<float>::quiet_NaN();
  }
  {
    const trace::Scope s(be_, "lnf norm forward");
    norm_forward(b.lnf, b.lnf_mean, b.lnf_rstd, b.layers.back().res3, b.lnfw, b.lnfb);
  }
  {
    const trace::Scope s(be_, "lm_head matmul forward");
    be_.matmul_forward(b.logits, b.lnf, b.headw, nullptr, N, C, vocab_rows_.count());
  }
  {
    const trace::Scope s(be_, "loss softmax_xent forward");
    loss_forward(b.losses, b.xstats, b.xmax, b.xpart, b.logits, b.targets);
  }

  be_.copy_to_host(losses_host_.data(), b.losses, static_cast<size_t>(N) * sizeof(float));
  loss_sum_.clear();
  loss_sum_.add(losses_host_.data(), losses_host_.size());
  if (be_.numerics().reduce == ReduceMode::native) {
    be_.native_loss_mean(native_mean_.data_as<float>(), b.losses, N);
    float mean = 0.0f;
    be_.copy_to_host(&mean, native_mean_.data_as<float>(), sizeof mean);
    return mean;
  }
  return mean_loss(loss_sum_, N);
}

void GPT::backward(float loss_scale) {
  const int B = B_, T = cfg_.seq_len, C = cfg_.n_embd, V = cfg_.vocab, S = tp_layout_.size;
  const int NH = cfg_.n_head / S, CA = C / S, F = int(cfg_.ffn()) / S;  // this rank's heads and widths
  const int blocks = int(cfg_.fc_blocks()), FC = blocks * F;
  const int G = cfg_.kv_heads() / S, W = int(cfg_.qkv_rows()) / S, hd = cfg_.head_dim();
  const int q_blocks = cfg_.n_head / cfg_.kv_heads();
  const int N = B * T;
  const int64_t NC = static_cast<int64_t>(N) * C;
  Buffers& b = *buf_;
  // Every gradient op writes its tensor whole (GEMMs with accumulate off, the token reductions
  // from +0, dwpe's chains) except the embedding's, which adds its tokens' rows into dwte: dwte
  // holds the tied head's dW by then, else it starts from zero. The padding stays zero from alloc.
  // Over pipeline stages a stage holds only its tensors (stage_holds); a tied dwte is
  // the last stage's head dW without the rows of the micro-batch's tokens, which travel with the
  // gradient message to the first stage, whose embedding adds into them (put_tied_rows).
  if (first_stage() && (!cfg_.tied_head || passes_tied_rows())) be_.zero(b.dwte, param("wte").numel * sizeof(float));
  if (last_stage()) {
    {
      const trace::Scope s(be_, "loss softmax_xent backward");
      be_.softmax_xent_backward(b.dlogits, b.logits, b.xstats, b.targets, N, vocab_rows_.count(), loss_scale);
    }
    {
      const trace::Scope s(be_, "lm_head matmul backward");
      col_backward(b.dbtc1, b.dheadw, nullptr, b.dlogits, b.lnf, b.headw, N, C, vocab_rows_.count(), cfg_.vocab, 1);
    }
    {
      const trace::Scope s(be_, "lnf norm backward");
      norm_backward(b.dres, b.dlnfw, b.dlnfb, b.dbtc1, b.layers.back().res3, b.lnfw, b.lnf_mean, b.lnf_rstd);
    }
    if (passes_tied_rows()) take_tied_rows(b.dwte);
  }
  for (size_t l = b.layers.size(); l-- > 0;) {
    Layer& L = b.layers[l];
    const int64_t layer = blocks_.first + int64_t(l);
    const auto at = [&](const char* site) { return trace::Scope(be_, "h.", layer, site); };
    // MLP branch: dres is d(res3) = d(res2 + fcproj).
    if (b.moe[l] != nullptr) {
      moe_backward(*b.moe[l], layer, L.ln2, b.dres, b.dbtc1, loss_scale);
    } else {
      {
        const auto s = at(".mlp.proj matmul backward");
        be_.matmul_backward(b.dff1, L.dfc2w, L.dfc2b, b.dres, L.fch_gelu, L.fc2w, N, F, C);
      }
      if (cfg_.mlp == MlpKind::swiglu) {
        const auto s = at(".mlp swiglu backward");
        be_.swiglu_backward(b.dff2, L.fch, b.dff1, N, F);
      } else {
        const auto s = at(".mlp gelu backward");
        be_.gelu_backward(b.dff2, L.fch, b.dff1, static_cast<int64_t>(N) * F);
      }
      const auto s = at(".mlp.fc matmul backward");
      col_backward(b.dbtc1, L.dfcw, L.dfcb, b.dff2, L.ln2, L.fcw, N, C, FC, blocks * int(cfg_.ffn()), blocks);
    }
    {
      const auto s = at(".ln2 norm backward");
      norm_backward(b.dbtc2, L.dln2w, L.dln2b, b.dbtc1, L.res2, L.ln2w, L.ln2_mean, L.ln2_rstd);
    }
    {
      const auto s = at(".mlp residual backward");
      be_.residual_forward(b.dres, b.dres, b.dbtc2, NC);
    }
    // Attention branch: dres is now d(res2) = d(input + attproj).
    {
      const auto s = at(".attn.proj matmul backward");
      be_.matmul_backward(b.dbtc1, L.dprojw, L.dprojb, b.dres, L.atty, L.projw, N, CA, C);
    }
    {
      const auto s = at(".attn attention backward");
      be_.attention_backward(b.dqkv, b.datt, b.dbtc1, L.heads, L.att, B, T, CA, NH);
    }
    if (cfg_.pos == PosKind::rope) {
      const auto s = at(".attn rope backward");
      be_.rope_backward(b.dqkv, rope_.data_as<float>(), B, T, CA, NH);
    }
    // The gradient of the qkv product's rows: dqkv, or GQA's sum over query heads in dqkv_rows,
    // then QK-norm's backward into the buffer that is free.
    float* drows = b.dqkv;
    if (cfg_.gqa()) {
      const auto s = at(".attn kv_repeat backward");
      be_.kv_repeat_backward(b.dqkv_rows, b.dqkv, N, NH, G, hd);
      drows = b.dqkv_rows;
    }
    if (cfg_.qk_norm) {
      const auto s = at(".attn qk_norm backward");
      float* out = drows == b.dqkv ? b.dqkv_rows : b.dqkv;
      qk_norm_backward(out, L.dqnw, L.dknw, drows, L.qkv, L.qnw, L.knw, L.qk_rstd, N, NH, G);
      drows = out;
    }
    {
      const auto s = at(".attn.qkv matmul backward");
      col_backward(b.dbtc1, L.dqkvw, L.dqkvb, drows, L.ln1, L.qkvw, N, C, W, int(cfg_.qkv_rows()), q_blocks + 2);
    }
    {
      const auto s = at(".ln1 norm backward");
      norm_backward(b.dbtc2, L.dln1w, L.dln1b, b.dbtc1, L.input, L.ln1w, L.ln1_mean, L.ln1_rstd);
    }
    {
      const auto s = at(".attn residual backward");
      be_.residual_forward(b.dres, b.dres, b.dbtc2, NC);
    }
  }
  if (!first_stage()) return;  // the schedule sends stage_grad() on
  if (passes_tied_rows()) put_tied_rows(b.dwte);
  {
    const trace::Scope s(be_, "wte+wpe embedding backward");
    be_.embedding_backward(b.dwte, b.dwpe, b.dres, b.inputs, B, T, C, V, vocab_rows_);
  }
}

float mean_loss(const det::ExactSum& loss_sum, int64_t tokens) {
  SB_CHECK(tokens > 0, "mean loss of ", tokens, " tokens");
  return static_cast<float>(loss_sum.to_f64() / static_cast<double>(tokens));
}

GradientSink accumulator_sink(const GPT& model, GradAccumulator& acc, TensorSums* squares) {
  return [&model, &acc, squares](const float* grads, const std::vector<size_t>& tensors) {
    std::vector<TensorSpan> spans;
    for (size_t t : tensors) spans.push_back({model.params()[t].offset, model.params()[t].numel});
    acc.add_spans(grads, spans);
    if (squares != nullptr) squares->add_squares_of(grads, tensors);
  };
}

void accumulate_leaves(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc,
                       det::ExactSum& loss_sum, const LeafPass& pass) {
  SB_CHECK(acc.size() == model.flat_size(), "gradient accumulator of ", acc.size(),
           " elements given for a model whose flat gradient has ", model.flat_size());
  if (model.experts() != nullptr) model.set_gradient_sink(accumulator_sink(model, acc, pass.leaf_squares));
  const float* pending = nullptr;  // an earlier leaf's gradient waiting for its pair
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (pass.before_forward) pass.before_forward(i);
    const float loss = model.forward(leaves[i]);
    if (pass.after_forward) pass.after_forward(i);
    model.backward(pass.loss_scale);
    const float* g = model.grads().data_as<float>();
    loss_sum.merge(model.loss_sum());
    if (pass.on_leaf) pass.on_leaf(i, loss, g);
    if (pending != nullptr) {
      acc.add_leaves(pending, g, pass.leaf_squares);
      pending = nullptr;
    } else if (i + 1 < leaves.size()) {
      pending = g;  // kept in the other buffer while the next leaf runs
      model.swap_gradients();
    } else {
      acc.add_leaves(g, nullptr, pass.leaf_squares);
    }
  }
}

float batch_gradient(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc, float* grad_out,
                     const LeafObserver& on_leaf) {
  SB_CHECK(!leaves.empty(), "a batch needs at least one leaf");
  acc.clear();
  det::ExactSum loss_sum;
  accumulate_leaves(model, leaves, acc, loss_sum, LeafPass{1.0f, {}, on_leaf, nullptr, {}});
  acc.round(grad_out, static_cast<float>(leaves.size()));
  return mean_loss(loss_sum, static_cast<int64_t>(leaves.size()) * model.leaf_tokens());
}

}  // namespace sb
