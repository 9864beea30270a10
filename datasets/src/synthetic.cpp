// The synthetic language's tables (layout, Zipf law, Markov row permutations), its stream view and
// its statistics. Tables are integer-valued, so every build derives the same language from a seed.
#include <algorithm>
#include <cmath>

#include "samebits/data/permutation.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"
#include "samebits/det/philox.hpp"

namespace sb::data {

namespace {
constexpr uint64_t kRowCacheLimit = uint64_t{1} << 20;  // cache row permutations up to 4 MiB
constexpr int kMaxSyntheticVocab = 1 << 24;

int clamp_div(int v, int d, int lo, int hi) { return std::clamp(v / d, lo, hi); }
}  // namespace

SyntheticLayout::SyntheticLayout(int v) : vocab(v) {
  SB_CHECK(v >= 32 && v <= kMaxSyntheticVocab, "synthetic language: vocab=", v,
           " is outside [32, 2^24]; set model.vocab in that range");
  brackets = clamp_div(v, 32, 2, 8);
  words = clamp_div(v, 32, 2, 8);
  keys = clamp_div(v, 64, 1, 4);
  open0 = 1;
  close0 = open0 + brackets;
  subject0 = close0 + brackets;
  verb0 = subject0 + 2 * words;
  end = verb0 + 2 * words;
  mark0 = end + 1;
  recall0 = mark0 + keys;
  span_end = recall0 + keys;
  background0 = span_end + 1;
  background = v - background0;
}

SyntheticLanguage::SyntheticLanguage(const SyntheticConfig& config, int vocab, uint64_t seed, Split split)
    : config_(config), layout_(vocab), seed_(seed), split_(split) {
  const SyntheticConfig& c = config;
  SB_CHECK(c.doc_len >= 2, "data.doc_len=", c.doc_len, " must be at least 2 (BOS and one token)");
  SB_CHECK(c.markov_run >= 1 && c.markov_run <= 1000, "data.markov_run=", c.markov_run, " is outside [1, 1000]");
  SB_CHECK(c.span_min >= 1 && c.span_max >= c.span_min && c.span_max <= 4096, "data.span_min=", c.span_min,
           ", data.span_max=", c.span_max, ": need 1 <= span_min <= span_max <= 4096");
  SB_CHECK(c.max_depth >= 0 && c.max_depth <= 16, "data.max_depth=", c.max_depth, " is outside [0, 16]");
  const double mix[4] = {c.mix_markov, c.mix_grammar, c.mix_mark, c.mix_recall};
  const char* names[4] = {"mix_markov", "mix_grammar", "mix_mark", "mix_recall"};
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    SB_CHECK(std::isfinite(mix[i]) && mix[i] >= 0 && mix[i] <= 1e6, "data.", names[i], "=", mix[i],
             " must be a weight in [0, 1e6]");
    sum += mix[i];
  }
  SB_CHECK(mix[0] + mix[1] + mix[2] > 0,
           "data.mix_markov, data.mix_grammar and data.mix_mark are "
           "all 0: a document needs a segment type that is always possible");
  for (int i = 0; i < 4; ++i) mix_[i] = uint32_t(std::llround(mix[i] / sum * 1e6));  // ppm
  SB_CHECK(mix_[0] + mix_[1] + mix_[2] > 0,
           "data.mix_recall dwarfs the other mixture weights "
           "(below one part per million each); give them more weight");

  const std::string name = std::string("data.synthetic.") + split_name(split);
  doc_stream_ = det::stream_of(name);

  const int b = layout_.background;
  zipf_cdf_.resize(b);
  uint64_t total = 0;
  for (int r = 0; r < b; ++r) {
    total += std::max<uint64_t>(1, (uint64_t{1} << 20) / uint64_t(r + 1));
    zipf_cdf_[r] = uint32_t(total);
  }
  for (int r = 0; r < b; ++r) {
    const double p = double(zipf_cdf_[r] - (r > 0 ? zipf_cdf_[r - 1] : 0)) / double(total);
    zipf_entropy_ -= p * det::log(float(p));
  }
  const uint64_t rows = uint64_t(vocab) + 1;  // a row per previous token, and the objects' row
  if (rows * uint64_t(b) <= kRowCacheLimit) {
    rows_.resize(rows * b);
    const uint64_t stream = det::stream_of("data.synthetic.markov_rows");
    for (uint64_t row = 0; row < rows; ++row) {
      for (int r = 0; r < b; ++r) {
        rows_[row * b + r] = uint32_t(keyed_permutation(uint64_t(r), uint64_t(b), seed_, stream + row));
      }
    }
  }
}

std::string SyntheticLanguage::describe() const {
  return "synthetic language (vocab " + std::to_string(layout_.vocab) + ", seed " + std::to_string(seed_) + ", " +
         split_name(split_) + " stream)";
}

uint32_t SyntheticLanguage::zipf_rank(uint32_t draw) const {
  const uint32_t x = uint32_t((uint64_t(draw) * zipf_cdf_.back()) >> 32);
  return uint32_t(std::upper_bound(zipf_cdf_.begin(), zipf_cdf_.end(), x) - zipf_cdf_.begin());
}

int32_t SyntheticLanguage::zipf_token(uint32_t row, uint32_t draw) const {
  const uint32_t rank = zipf_rank(draw);
  const uint64_t b = uint64_t(layout_.background);
  const uint64_t perm = rows_.empty()
                            ? keyed_permutation(rank, b, seed_, det::stream_of("data.synthetic.markov_rows") + row)
                            : rows_[row * b + rank];
  return layout_.background0 + int32_t(perm);
}

double SyntheticLanguage::zipf_log_prob(uint32_t draw) const {
  const uint32_t rank = zipf_rank(draw);
  const uint32_t w = zipf_cdf_[rank] - (rank > 0 ? zipf_cdf_[rank - 1] : 0);
  return det::log(float(double(w) / double(zipf_cdf_.back())));
}

void SyntheticLanguage::read(uint64_t pos, uint64_t len, int32_t* out) const {
  SB_CHECK(len <= kInfinite - pos, describe(), ": window [", pos, ", +", len, ") overflows 64 bits");
  thread_local std::vector<int32_t> scratch;  // (offset + n,) a document prefix
  const uint64_t doc_len = config_.doc_len;
  while (len > 0) {
    const uint64_t doc = pos / doc_len, offset = pos % doc_len;
    const uint64_t n = std::min(len, doc_len - offset);
    if (offset == 0) {
      document(doc, n, out);
    } else {
      scratch.resize(offset + n);
      document(doc, offset + n, scratch.data());
      std::copy_n(scratch.data() + offset, n, out);
    }
    pos += n;
    out += n;
    len -= n;
  }
}

SyntheticStats synthetic_stats(const SyntheticLanguage& language, uint64_t tokens) {
  const uint64_t doc_len = language.config().doc_len;
  const uint64_t docs = (tokens + doc_len - 1) / doc_len;
  std::vector<int32_t> doc(doc_len);       // (doc_len,)
  std::vector<TokenTrace> trace(doc_len);  // (doc_len,)
  std::vector<uint64_t> counts(language.vocab(), 0);
  uint64_t kind_count[kSegmentKinds] = {};
  double kind_nll[kSegmentKinds] = {};
  SyntheticStats s;
  for (uint64_t d = 0; d < docs; ++d) {
    language.document(d, doc_len, doc.data(), trace.data());
    for (uint64_t t = 0; t < doc_len; ++t) {
      ++counts[doc[t]];
      s.ideal_loss += trace[t].entropy;
      s.ideal_nll += trace[t].nll;
      ++kind_count[int(trace[t].kind)];
      kind_nll[int(trace[t].kind)] += trace[t].nll;
    }
  }
  s.tokens = docs * doc_len;
  const double n = double(s.tokens);
  for (uint64_t c : counts) {
    if (c > 0) s.unigram_entropy -= double(c) / n * det::log(float(double(c) / n));
  }
  s.ideal_loss /= n;
  s.ideal_nll /= n;
  for (int k = 0; k < kSegmentKinds; ++k) {
    s.fraction[k] = double(kind_count[k]) / n;
    s.kind_nll[k] = kind_count[k] > 0 ? kind_nll[k] / double(kind_count[k]) : 0.0;
  }
  return s;
}

}  // namespace sb::data
