// Back-off n-gram baselines: how far a model without attention gets on a token stream. Fit by
// counting on training tokens, evaluated as cross-entropy (nats per token) on other tokens.
// Interpolated Witten–Bell smoothing (Witten & Bell 1991): with C the counts and T(h) the number of
// distinct tokens seen after context h,
//   p1(c) = (C(c) + 1) / (N + V)
//   p2(c | b) = (C(b c) + T(b) p1(c)) / (C(b) + T(b))
//   p3(c | a b) = (C(a b c) + T(a b) p2(c | b)) / (C(a b) + T(a b))
// (an unseen context gives the lower order). A statistic for docs and tests, not a bitwise contract.
#pragma once
#include <cstdint>

namespace sb::data {

struct NgramLosses {
  double unigram = 0;  // cross-entropy of p1 on the evaluation tokens, nats per token
  double bigram = 0;   // of p2 (first evaluation token predicted by p1)
  double trigram = 0;  // of p3 (first two by p1, p2)
};

// train (n_train,), eval (n_eval,): token ids < vocab <= 2^21.
NgramLosses ngram_cross_entropy(const int32_t* train, uint64_t n_train, const int32_t* eval, uint64_t n_eval,
                                uint64_t vocab);

}  // namespace sb::data
