// ngram_cross_entropy: n-gram ids in base vocab, counted by sorting (memory 8 bytes per training
// token per order, whatever the vocabulary), looked up by binary search.
#include "samebits/data/ngram.hpp"

#include <algorithm>
#include <vector>

#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"

namespace sb::data {

namespace {

// Counts of n-grams keyed context*V + token, and per context its count and distinct successors.
struct Table {
  std::vector<uint64_t> keys, counts;  // (distinct n-grams,) sorted
  std::vector<uint64_t> contexts;      // (distinct contexts,) sorted
  std::vector<uint64_t> context_counts, context_types;

  explicit Table(std::vector<uint64_t> all, uint64_t v) {
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size();) {
      size_t j = i;
      while (j < all.size() && all[j] == all[i]) ++j;
      keys.push_back(all[i]);
      counts.push_back(j - i);
      const uint64_t ctx = all[i] / v;
      if (contexts.empty() || contexts.back() != ctx) {
        contexts.push_back(ctx);
        context_counts.push_back(0);
        context_types.push_back(0);
      }
      context_counts.back() += j - i;
      context_types.back() += 1;
      i = j;
    }
  }

  // Witten–Bell: (C(h c) + T(h) lower) / (C(h) + T(h)), or `lower` for an unseen context h.
  double prob(uint64_t ctx, uint64_t token, uint64_t v, double lower) const {
    const auto h = std::lower_bound(contexts.begin(), contexts.end(), ctx);
    if (h == contexts.end() || *h != ctx) return lower;
    const size_t hi = size_t(h - contexts.begin());
    const auto k = std::lower_bound(keys.begin(), keys.end(), ctx * v + token);
    const double c = (k != keys.end() && *k == ctx * v + token) ? double(counts[size_t(k - keys.begin())]) : 0.0;
    const double t = double(context_types[hi]);
    return (c + t * lower) / (double(context_counts[hi]) + t);
  }
};

double nll(double p) { return -double(det::log(float(p))); }

}  // namespace

NgramLosses ngram_cross_entropy(const int32_t* train, uint64_t n_train, const int32_t* eval, uint64_t n_eval,
                                uint64_t vocab) {
  SB_CHECK(vocab >= 1 && vocab <= (uint64_t{1} << 21), "n-gram baseline: vocab ", vocab, " is outside [1, 2^21]");
  SB_CHECK(n_train >= 3 && n_eval >= 1, "n-gram baseline: need >= 3 training and >= 1 evaluation tokens");
  const uint64_t v = vocab;
  auto token = [&](const int32_t* x, uint64_t i) {
    SB_CHECK(x[i] >= 0 && uint64_t(x[i]) < v, "n-gram baseline: token ", x[i], " outside [0, ", v, ")");
    return uint64_t(x[i]);
  };
  std::vector<uint64_t> uni(v, 0);  // (V,)
  std::vector<uint64_t> bi, tri;    // b*V + c, (a*V + b)*V + c
  bi.reserve(n_train);
  tri.reserve(n_train);
  for (uint64_t i = 0; i < n_train; ++i) {
    const uint64_t c = token(train, i);
    ++uni[c];
    if (i >= 1) bi.push_back(token(train, i - 1) * v + c);
    if (i >= 2) tri.push_back((token(train, i - 2) * v + token(train, i - 1)) * v + c);
  }
  const Table t2(std::move(bi), v), t3(std::move(tri), v);

  auto p1 = [&](uint64_t c) { return (double(uni[c]) + 1.0) / (double(n_train) + double(v)); };
  NgramLosses loss;
  for (uint64_t i = 0; i < n_eval; ++i) {
    const uint64_t c = token(eval, i);
    const double q1 = p1(c);
    const double q2 = i >= 1 ? t2.prob(token(eval, i - 1), c, v, q1) : q1;
    const double q3 = i >= 2 ? t3.prob(token(eval, i - 2) * v + token(eval, i - 1), c, v, q2) : q2;
    loss.unigram += nll(q1);
    loss.bigram += nll(q2);
    loss.trigram += nll(q3);
  }
  loss.unigram /= double(n_eval);
  loss.bigram /= double(n_eval);
  loss.trigram /= double(n_eval);
  return loss;
}

}  // namespace sb::data
