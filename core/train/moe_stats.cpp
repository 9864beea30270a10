// MoeStepStats (train/moe_stats.hpp): integer and exact sums, so the leaves' and ranks' order and
// split cannot change a bit; a pipeline stage contributes its blocks and zeros for the others.
// The biases move on every rank from the same summed selections, so they need no message.
#include "samebits/core/train/moe_stats.hpp"

#include "samebits/core/ops/moe_router.hpp"
#include "samebits/det/error.hpp"

namespace sb {

MoeStepStats::MoeStepStats(const GPTConfig& cfg, Backend& backend, bool flips, bool counted)
    : cfg_(cfg), be_(backend), flips_(flips), counted_(counted), ordinal_(size_t(cfg.n_layer), -1) {
  for (int l = 0; l < cfg.n_layer; ++l)
    if (cfg.moe_block(l)) ordinal_[size_t(l)] = blocks_++;
  bias_.assign(size_t(blocks_) * size_t(cfg.moe_experts), 0.0f);
  clear();
}

void MoeStepStats::clear() {
  counts_.assign(size_t(blocks_) * size_t(cfg_.moe_experts), 0);
  aux_.assign(size_t(blocks_), det::ExactSum{});
  entropy_.assign(size_t(blocks_), det::ExactSum{});
  flip_counts_.assign(size_t(blocks_), 0);
  used_ = 0;
}

void MoeStepStats::add_leaf(const GPT& model) {
  if (!counted_) return;
  for (int l = model.blocks().first; l < model.blocks().end; ++l) {
    const int b = ordinal_[size_t(l)];
    if (b < 0) continue;
    const std::vector<int64_t>& counts = model.moe_counts(l);
    for (size_t e = 0; e < counts.size(); ++e) counts_[size_t(b) * counts.size() + e] += counts[e];
    aux_[size_t(b)].add(model.moe_aux_loss(l));
    entropy_[size_t(b)].merge(model.moe_entropy(l));
    if (!flips_) continue;
    if (used_ == kept_.size()) kept_.emplace_back();
    Kept& k = kept_[used_++];
    k.layer = l;
    k.x.resize(size_t(model.leaf_tokens()) * size_t(cfg_.n_embd));
    be_.copy_to_host(k.x.data(), model.moe_input(l), k.x.size() * sizeof(float));
    k.chosen = model.moe_choices(l);
  }
}

void MoeStepStats::finish(Communicator& world, int64_t leaves, int64_t tokens, StepStats& st) {
  constexpr size_t kWords = det::ExactSum::kWords;
  // One integer all-reduce: the selections, then every block's two exact sums as words.
  std::vector<int64_t> all(counts_);
  all.resize(counts_.size() + 2 * size_t(blocks_) * kWords);
  for (int b = 0; b < blocks_; ++b) {
    aux_[size_t(b)].to_words(all.data() + counts_.size() + size_t(2 * b) * kWords);
    entropy_[size_t(b)].to_words(all.data() + counts_.size() + size_t(2 * b + 1) * kWords);
  }
  if (world.size() > 1) world.allreduce_sum_i64(all.data(), all.size());
  st.moe_tokens.assign(all.begin(), all.begin() + ptrdiff_t(counts_.size()));
  st.moe_aux_loss.resize(size_t(blocks_));
  st.moe_entropy.resize(size_t(blocks_));
  for (int b = 0; b < blocks_; ++b) {
    const int64_t* words = all.data() + counts_.size() + size_t(2 * b) * kWords;
    st.moe_aux_loss[size_t(b)] = det::ExactSum::from_words(words).to_f64() / double(leaves);
    st.moe_entropy[size_t(b)] = det::ExactSum::from_words(words + kWords).to_f64() / double(tokens);
  }
}

void MoeStepStats::after_update(GPT& model, Communicator& world, bool applied, StepStats& st) {
  const int E = cfg_.moe_experts;
  if (applied && cfg_.moe_bias_rate > 0.0) {
    SB_CHECK(st.moe_tokens.size() == bias_.size(), "MoE bias update without the step's selections");
    for (int b = 0; b < blocks_; ++b)
      ops::moe_bias_update(bias_.data() + size_t(b) * size_t(E), st.moe_tokens.data() + size_t(b) * size_t(E), E,
                           static_cast<float>(cfg_.moe_bias_rate));
    model.set_moe_bias(bias_);
  }
  st.moe_bias = bias_;
  if (!flips_ || be_.tracer() != nullptr) {  // a traced step's stream holds the step's own ops only
    st.moe_route_flips.assign(size_t(blocks_), -1);
    return;
  }
  if (applied && counted_) count_flips(model);  // a skipped step changed no router: no flip
  st.moe_route_flips = flip_counts_;
  if (world.size() > 1) world.allreduce_sum_i64(st.moe_route_flips.data(), st.moe_route_flips.size());
}

void MoeStepStats::count_flips(GPT& model) {
  const size_t k = size_t(cfg_.moe_top_k);
  std::vector<int32_t> now;
  for (size_t i = 0; i < used_; ++i) {
    const Kept& kept = kept_[i];
    model.moe_route(kept.layer, kept.x.data(), now);
    flip_counts_[size_t(ordinal_[size_t(kept.layer)])] +=
        ops::moe_routes_differing(now.data(), kept.chosen.data(), int64_t(now.size() / k), int(k));
  }
}

void MoeStepStats::set_bias(GPT& model, const std::vector<float>& bias) {
  SB_CHECK(bias.size() == bias_.size(), "MoE router bias of ", bias.size(), " values; the model has ", blocks_,
           " MoE blocks of ", cfg_.moe_experts, " experts");
  bias_ = bias;
  model.set_moe_bias(bias_);
}

}  // namespace sb
