// MoeStepStats (train/moe_stats.hpp): integer and exact sums, so the leaves' and ranks' order and
// split cannot change a bit; a pipeline stage contributes its blocks and zeros for the others.
#include "samebits/core/train/moe_stats.hpp"

namespace sb {

MoeStepStats::MoeStepStats(const GPTConfig& cfg) : cfg_(cfg), ordinal_(size_t(cfg.n_layer), -1) {
  for (int l = 0; l < cfg.n_layer; ++l)
    if (cfg.moe_block(l)) ordinal_[size_t(l)] = blocks_++;
  clear();
}

void MoeStepStats::clear() {
  counts_.assign(size_t(blocks_) * size_t(cfg_.moe_experts), 0);
  aux_.assign(size_t(blocks_), det::ExactSum{});
  entropy_.assign(size_t(blocks_), det::ExactSum{});
}

void MoeStepStats::add_leaf(const GPT& model) {
  for (int l = model.blocks().first; l < model.blocks().end; ++l) {
    const int b = ordinal_[size_t(l)];
    if (b < 0) continue;
    const std::vector<int64_t>& counts = model.moe_counts(l);
    for (size_t e = 0; e < counts.size(); ++e) counts_[size_t(b) * counts.size() + e] += counts[e];
    aux_[size_t(b)].add(model.moe_aux_loss(l));
    entropy_[size_t(b)].merge(model.moe_entropy(l));
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

}  // namespace sb
