// The embedded synthetic language (docs/DATA.md): a mixture of Zipfian Markov runs, a bracket
// grammar with subject-verb agreement, and marked spans recalled later. Document d of a split is a
// pure function of (seed, split, d): Philox4x32-10 with stream stream_of("data.synthetic.<split>")+d
// and counter 2t, 2t+1 for token t; sampling is integer-only, so the tokens are the same everywhere.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/data/token_source.hpp"

namespace sb::data {

// Token ids of the language for a vocabulary V >= 32: K bracket pairs, S subject and S verb words
// per grammatical number, J span keys; everything else is background (Markov, objects, spans).
struct SyntheticLayout {
  explicit SyntheticLayout(int vocab);
  int vocab;
  int brackets;         // K = clamp(V/32, 2, 8)
  int words;            // S = clamp(V/32, 2, 8)
  int keys;             // J = clamp(V/64, 1, 4)
  int32_t bos = 0;      // first token of every document
  int32_t open0;        // OPEN_k  = open0 + k,  k < K
  int32_t close0;       // CLOSE_k = close0 + k
  int32_t subject0;     // SUBJ(number n, word i) = subject0 + n*S + i, n in {0 singular, 1 plural}
  int32_t verb0;        // VERB(n, i) = verb0 + n*S + i
  int32_t end;          // END of a sentence
  int32_t mark0;        // MARK_j = mark0 + j,  j < J
  int32_t recall0;      // RECALL_j = recall0 + j
  int32_t span_end;     // SPAN_END closes a marked span
  int32_t background0;  // background tokens [background0, vocab)
  int background;       // B = vocab - background0
};

// Which part of the language emitted a token (for the statistics).
enum class SegmentKind : int { bos = 0, markov = 1, grammar = 2, mark = 3, recall = 4 };
constexpr int kSegmentKinds = 5;

// Per-token record of the generator's true next-token distribution, for the ideal-loss estimate:
// the state is a function of the visible document prefix, so these are the exact conditionals.
struct TokenTrace {
  float entropy;  // H(p(. | prefix)) in nats
  float nll;      // -ln p(token | prefix)
  SegmentKind kind;
};

class SyntheticLanguage final : public TokenSource {
 public:
  SyntheticLanguage(const SyntheticConfig& config, int vocab, uint64_t seed, Split split);

  uint64_t size() const override { return kInfinite; }
  uint64_t vocab() const override { return uint64_t(layout_.vocab); }
  std::string describe() const override;
  // The stream is the documents concatenated: token p is token p % doc_len of document p / doc_len.
  void read(uint64_t pos, uint64_t len, int32_t* out) const override;

  // The first `count` (<= doc_len) tokens of document `doc` into out (count,); trace (count,) if given.
  void document(uint64_t doc, uint64_t count, int32_t* out, TokenTrace* trace = nullptr) const;

  const SyntheticLayout& layout() const { return layout_; }
  const SyntheticConfig& config() const { return config_; }
  // Entropy in nats of one Markov row (all rows are the same Zipf law, permuted).
  double markov_row_entropy() const { return zipf_entropy_; }

 private:
  friend class SyntheticGenerator;
  uint32_t zipf_rank(uint32_t draw) const;                // Zipf rank of a 32-bit draw
  int32_t zipf_token(uint32_t row, uint32_t draw) const;  // background token of row `row`
  double zipf_log_prob(uint32_t draw) const;              // ln p(rank of the draw)

  SyntheticConfig config_;
  SyntheticLayout layout_;
  uint64_t seed_;
  Split split_;
  uint64_t doc_stream_;             // stream of document 0
  uint32_t mix_[4];                 // markov, grammar, mark, recall weights (parts per million)
  std::vector<uint32_t> zipf_cdf_;  // (B,) cumulative Zipf weights floor(2^20 / (r+1))
  double zipf_entropy_ = 0;
  std::vector<uint32_t> rows_;  // (V+1, B) row permutations, when small enough to cache
};

// Statistics of the language's stream over its first `tokens` tokens (whole documents), in nats.
struct SyntheticStats {
  uint64_t tokens = 0;
  double unigram_entropy = 0;           // plug-in entropy of the token frequencies
  double ideal_loss = 0;                // mean entropy of the true next-token distribution
  double ideal_nll = 0;                 // mean -ln p(token | prefix): the same expectation, sampled
  double fraction[kSegmentKinds] = {};  // share of tokens by SegmentKind
  double kind_nll[kSegmentKinds] = {};  // mean ideal -ln p within each kind
};
SyntheticStats synthetic_stats(const SyntheticLanguage& language, uint64_t tokens);

}  // namespace sb::data
