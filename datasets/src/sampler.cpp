// The sampler: sequence k -> (epoch, window) by a keyed permutation per epoch; leaves and rank
// ranges by index arithmetic only, so every configuration reads the same windows for a leaf.
#include "samebits/data/sampler.hpp"

#include <algorithm>

#include "samebits/data/permutation.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/philox.hpp"

namespace sb::data {

namespace {
constexpr uint64_t kInfinite = TokenSource::kInfinite;
}

LeafRange leaf_range(int leaves, int world, int rank) {
  SB_CHECK(leaves >= 0 && world >= 1 && rank >= 0 && rank < world, "leaf_range: leaves=", leaves, ", world=", world,
           ", rank=", rank, ": need leaves >= 0, world >= 1, 0 <= rank < world");
  const int base = leaves / world, extra = leaves % world;
  const int begin = rank * base + std::min(rank, extra);
  return LeafRange{begin, begin + base + (rank < extra ? 1 : 0)};
}

Sampler::Sampler(const TokenSource& source, int seq_len, int leaf_size, int leaves, uint64_t seed)
    : Sampler(source, seq_len, leaf_size, leaves, SampleOrder{seed, 0}) {}

Sampler::Sampler(const TokenSource& source, int seq_len, int leaf_size, int leaves, SampleOrder order)
    : source_(source), seq_len_(seq_len), leaf_size_(leaf_size), leaves_(leaves), order_(order) {
  SB_CHECK(seq_len >= 1, "model.seq_len=", seq_len, " must be at least 1");
  SB_CHECK(leaf_size >= 1, "data.leaf_size=", leaf_size, " must be at least 1");
  SB_CHECK(leaves >= 1, "data.leaves=", leaves, " must be at least 1");
  const uint64_t n = source.size();
  if (n == kInfinite) {
    windows_ = kInfinite;
  } else {
    SB_CHECK(n >= uint64_t(seq_len) + 1, source.describe(), ": ", n,
             " tokens, fewer than one sequence of seq_len + 1 = ", seq_len + 1, " tokens");
    windows_ = (n - 1) / uint64_t(seq_len);
  }
}

uint64_t Sampler::window(uint64_t k) const {
  const uint64_t stream = det::stream_of("data.order");
  if (windows_ == kInfinite) {
    const uint64_t p = order_.generated_block;
    if (p == 0) return k;
    const uint64_t block = k / p;
    return block * p + keyed_permutation(k % p, p, order_.seed, stream + block);
  }
  const uint64_t epoch = k / windows_;
  return keyed_permutation(k % windows_, windows_, order_.seed, stream + epoch);
}

void Sampler::sequence(uint64_t k, int32_t* tokens) const {
  const uint64_t w = window(k);
  const uint64_t t = uint64_t(seq_len_);
  SB_CHECK(w <= (kInfinite - t - 1) / t, source_.describe(), ": sequence ", k, " lies beyond 2^64 tokens");
  source_.read(w * t, t + 1, tokens);
}

void Sampler::leaf(uint64_t step, int leaf, int32_t* tokens) const {
  SB_CHECK(leaf >= 0 && leaf < leaves_, "sampler: leaf ", leaf, " outside [0, ", leaves_, ")");
  SB_CHECK(step <= (kInfinite / sequences_per_step()) - 1, "sampler: step ", step,
           " overflows the 64-bit sequence index");
  const uint64_t first = (step * uint64_t(leaves_) + uint64_t(leaf)) * uint64_t(leaf_size_);
  const uint64_t row = uint64_t(seq_len_) + 1;
  for (int i = 0; i < leaf_size_; ++i) sequence(first + uint64_t(i), tokens + uint64_t(i) * row);
}

void Sampler::leaves(uint64_t step, LeafRange range, int32_t* tokens) const {
  SB_CHECK(range.begin >= 0 && range.begin <= range.end && range.end <= leaves_, "sampler: leaf range [", range.begin,
           ", ", range.end, ") outside [0, ", leaves_, ")");
  const uint64_t per_leaf = uint64_t(leaf_size_) * (uint64_t(seq_len_) + 1);
  for (int l = range.begin; l < range.end; ++l) leaf(step, l, tokens + uint64_t(l - range.begin) * per_leaf);
}

DataCursor Sampler::cursor(uint64_t step) const {
  SB_CHECK(step <= kInfinite / sequences_per_step(), "sampler: step ", step, " overflows the 64-bit sequence index");
  const uint64_t k = step * sequences_per_step();
  if (windows_ == kInfinite) return DataCursor{0, k};
  return DataCursor{k / windows_, k % windows_};
}

uint64_t Sampler::step_of(DataCursor c) const {
  uint64_t k = c.position;
  if (windows_ == kInfinite) {
    SB_CHECK(c.epoch == 0, "data cursor (epoch ", c.epoch, ", position ", c.position, ") does not fit ",
             source_.describe(), ", which has a single endless epoch");
  } else {
    SB_CHECK(c.position < windows_ && c.epoch <= (kInfinite - c.position) / windows_, "data cursor (epoch ", c.epoch,
             ", position ", c.position, ") does not fit ", source_.describe(), " with ", windows_,
             " windows of seq_len ", seq_len_, " per epoch: the data changed since the checkpoint");
    k += c.epoch * windows_;
  }
  SB_CHECK(k % sequences_per_step() == 0, "data cursor (epoch ", c.epoch, ", position ", c.position,
           ") is not at a step boundary of this run (leaves x leaf_size = ", sequences_per_step(),
           " sequences a step): the batch shape changed since the checkpoint");
  return k / sequences_per_step();
}

ValidationSet::ValidationSet(const TokenSource& source, int seq_len, uint64_t sequences)
    : source_(source), seq_len_(seq_len), sequences_(sequences) {
  SB_CHECK(seq_len >= 1, "model.seq_len=", seq_len, " must be at least 1");
  SB_CHECK(sequences >= 1, "validation set: need at least one sequence, got ", sequences);
  const uint64_t n = source.size();
  SB_CHECK(n == kInfinite || (n >= uint64_t(seq_len) + 1 && sequences <= (n - 1) / uint64_t(seq_len)),
           "validation data ", source.describe(), ": ", n, " tokens hold fewer than ", sequences,
           " sequences of seq_len + 1 = ", seq_len + 1, " tokens (windows overlap by one token)");
}

void ValidationSet::sequence(uint64_t i, int32_t* tokens) const {
  SB_CHECK(i < sequences_, "validation set: sequence ", i, " outside [0, ", sequences_, ")");
  const uint64_t t = uint64_t(seq_len_);
  source_.read(i * t, t + 1, tokens);
}

}  // namespace sb::data
