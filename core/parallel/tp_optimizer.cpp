// TpOptimizer (parallel/tp_optimizer.hpp). Determinism: a sharded matrix's update is the
// one-process optimizer's on the bit-exact gathered tensor (the same weights, gradient, state and
// step context), so its result, state and statistics are the one-process bits; the rank keeps its
// shard of each. An elementwise update (AdamW's) is the one-process update of each element, on
// the shard; its statistics' exact sums (Σd², ΣW²) are summed over the group as integer words, so
// they are the whole tensor's. Replicated tensors: the one-process update on identical replicas.
#include "samebits/core/parallel/tp_optimizer.hpp"

#include <algorithm>
#include <cstring>

#include "samebits/core/parallel/tp_ns_group.hpp"
#include "samebits/det/error.hpp"

namespace sb {

struct TpOptimizer::Scratch {
  std::unique_ptr<Optimizer> optimizer;  // over one tensor at offset 0
  Tensor weights, grads;                 // (numel) the full tensor
};

namespace {

// "attn.qkv.w" of "h.3.attn.qkv.w": tensors of every layer with one shape share a scratch.
std::string kind_of(const ParamView& p) {
  const size_t dot = p.name.find('.', p.name.find('.') + 1);
  return (p.name.rfind("h.", 0) == 0 && dot != std::string::npos ? p.name.substr(dot + 1) : p.name) + " " +
         shape_string(p.shape);
}

}  // namespace

TpOptimizer::TpOptimizer(const OptimConfig& config, TensorParallel& tp, Backend& backend, Precision precision)
    : config_(config), tp_(tp), backend_(backend), precision_(precision) {
  const bool duplicated = config.tp_mode == TpMode::duplicated;
  SB_CHECK(!duplicated || config.name != OptimizerName::normuon,
           "config optim.name=normuon with parallel.tp > 1: NorMuon's "
           "per-row state is not split by tensor parallelism yet; use optim.name=muon or adamw");
  const TpLayout& L = tp.layout();
  // blockwise: every shard a tensor of its own; distributed: Newton–Schulz over the group's shards.
  inner_ = ns_over_shards(config.tp_mode) ? make_tp_shard_optimizer(config, tp, backend, precision)
                                          : make_optimizer(config, L.local, backend, precision);
  gathered_.resize(L.local.size());
  for (size_t t = 0; t < gathered_.size(); ++t)
    gathered_[t] = duplicated && L.splits[t].sharded && needs_whole_tensor(config, L.full[t]);
  shards_.resize(L.local.size());
  kinds_.resize(L.local.size());
  stats_.resize(L.local.size());
  for (size_t t = 0; t < L.local.size(); ++t) {
    if (!gathered_[t]) continue;
    for (const StateBuffer& b : scratch_for(t).optimizer->state()) {
      SB_CHECK(b.numel == L.full[t].numel, "state buffer ", b.name, " of ", b.numel,
               " values is not one value per element of ", L.full[t].name);
      kinds_[t].push_back(b.name.substr(b.name.find('/') + 1));
    }
  }
  set_owned(std::vector<bool>(L.local.size(), true));
}

TpOptimizer::~TpOptimizer() = default;

TpOptimizer::Scratch& TpOptimizer::scratch_for(size_t t) {
  const ParamView& full = tp_.layout().full[t];
  std::unique_ptr<Scratch>& s = scratch_[kind_of(full)];
  if (!s) {
    s = std::make_unique<Scratch>();
    ParamView one = full;
    one.offset = 0;
    s->optimizer = make_optimizer(config_, {one}, backend_, precision_);
    s->weights = backend_.alloc(DType::f32, {static_cast<int64_t>(full.numel)});
    s->grads = backend_.alloc(DType::f32, {static_cast<int64_t>(full.numel)});
  }
  return *s;
}

void TpOptimizer::step(float* weights, const float* grads, const StepContext& ctx) {
  const TpLayout& L = tp_.layout();
  // The elementwise shards' weights before the update, for their statistics (host: CPU ranks).
  std::vector<size_t> shards;
  if (ctx.compute_stats)
    for (size_t t = 0; t < L.local.size(); ++t)
      if (L.splits[t].sharded && !gathered_[t] && owned_[t]) shards.push_back(t);
  std::vector<std::vector<float>>& before = before_;  // kept across steps: no fresh pages each step
  before.resize(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    const float* w = weights + L.local[shards[i]].offset;
    before[i].assign(w, w + L.local[shards[i]].numel);
  }
  inner_->step(weights, grads, ctx);
  const std::vector<TensorUpdateStats>& inner_stats = inner_->last_stats();
  for (size_t t = 0; t < L.local.size(); ++t) {
    if (!gathered_[t]) {
      stats_[t] = inner_stats[t];
      continue;
    }
    if (!owned_[t]) continue;  // another DP rank's group updates it (its stats stay as they were)
    Scratch& s = scratch_for(t);
    float* w = s.weights.data_as<float>();
    tp_.gather(t, weights, w);
    tp_.gather(t, grads, s.grads.data_as<float>());
    const std::vector<StateBuffer> full_state = s.optimizer->state();
    for (size_t k = 0; k < full_state.size(); ++k)
      tp_.gather_shard(t, shards_[t][k].data_as<float>(), full_state[k].data);
    s.optimizer->step(w, s.grads.data_as<float>(), ctx);
    stats_[t] = s.optimizer->last_stats()[0];
    tp_take_shard(L.splits[t], L.rank, w, weights + L.local[t].offset);
    for (size_t k = 0; k < full_state.size(); ++k)
      tp_take_shard(L.splits[t], L.rank, full_state[k].data, shards_[t][k].data_as<float>());
  }
  // Σd² and ΣW² of each elementwise shard (UpdateSums: the terms AdamW's kernels sum), exact,
  // added over the group as integer words: the whole tensor's sums, finished as one process does.
  if (shards.empty()) return;
  const size_t kw = det::ExactSum::kWords;
  std::vector<int64_t> words(shards.size() * 2 * kw);
  for (size_t i = 0; i < shards.size(); ++i) {
    const float* after = weights + L.local[shards[i]].offset;
    UpdateSums sums;
    for (size_t j = 0; j < before[i].size(); ++j) sums.add(before[i][j], after[j]);
    sums.delta_sq.to_words(words.data() + 2 * i * kw);
    sums.weight_sq.to_words(words.data() + (2 * i + 1) * kw);
  }
  tp_.tp().allreduce_sum_i64(words.data(), words.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    UpdateSums sums;
    sums.delta_sq = det::ExactSum::from_words(words.data() + 2 * i * kw);
    sums.weight_sq = det::ExactSum::from_words(words.data() + (2 * i + 1) * kw);
    stats_[shards[i]] = sums.finish(L.full[shards[i]].numel, inner_stats[shards[i]].ortho_error);
  }
}

std::vector<StateBuffer> TpOptimizer::state() {
  const TpLayout& L = tp_.layout();
  std::vector<StateBuffer> inner = inner_->state(), out;
  size_t next = 0;  // inner's buffers come in layout order of its owned (replicated) tensors
  for (size_t t = 0; t < L.local.size(); ++t) {
    if (gathered_[t]) {
      for (size_t k = 0; k < shards_[t].size(); ++k)
        out.push_back({L.local[t].name + "/" + kinds_[t][k], shards_[t][k].data_as<float>(), L.local[t].numel});
      continue;
    }
    const std::string prefix = L.local[t].name + "/";
    while (next < inner.size() && inner[next].name.rfind(prefix, 0) == 0) out.push_back(inner[next++]);
  }
  SB_CHECK(next == inner.size(), "tensor-parallel optimizer state: ", inner.size() - next,
           " buffers of the shard-local tensors are out of layout order");
  return out;
}

size_t TpOptimizer::state_bytes() const {
  size_t bytes = inner_->state_bytes();
  for (const auto& kinds : shards_)
    for (const Tensor& b : kinds) bytes += b.bytes();
  return bytes;
}

size_t TpOptimizer::scratch_bytes() const {
  size_t bytes = 0;
  for (const auto& [kind, s] : scratch_) bytes += s->weights.bytes() + s->grads.bytes() + s->optimizer->state_bytes();
  return bytes;
}

void TpOptimizer::set_owned(const std::vector<bool>& owned) {
  const TpLayout& L = tp_.layout();
  SB_CHECK(owned.size() == L.local.size(), "Optimizer::set_owned: expected one flag per tensor (", L.local.size(),
           "), got ", owned.size());
  std::vector<bool> local(owned.size());  // what inner_ updates: the owned tensors not gathered
  for (size_t t = 0; t < owned.size(); ++t) {
    local[t] = owned[t] && !gathered_[t];
    if (!gathered_[t]) continue;
    if (!owned[t]) {
      shards_[t].clear();
    } else if (shards_[t].empty()) {  // newly owned: zeroed shards (the backend zero-fills)
      for (size_t k = 0; k < kinds_[t].size(); ++k)
        shards_[t].push_back(backend_.alloc(DType::f32, {static_cast<int64_t>(L.local[t].numel)}));
    }
  }
  inner_->set_owned(local);
  owned_ = owned;
}

std::vector<double> TpOptimizer::update_cost() const { return sb::update_cost(config_, tp_.layout().full); }

}  // namespace sb
