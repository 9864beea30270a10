// The synthetic language: its stream is a fixed function of (seed, split, vocab, config) (fingerprint
// constants), random access equals sequential generation bit for bit, every document parses under
// the grammar (an independent recognizer), and its statistics show structure a bigram model learns
// and more that only attention can (ideal loss well below the n-gram baselines).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/data/ngram.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"

using namespace sb::data;

namespace {

uint64_t fnv1a(const int32_t* x, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(x);
  for (size_t i = 0; i < 4 * n; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::vector<int32_t> stream(const SyntheticLanguage& lang, uint64_t pos, uint64_t n) {
  std::vector<int32_t> out(n);
  lang.read(pos, n, out.data());
  return out;
}

// What a recognizer saw over the documents it checked.
struct Seen {
  int max_depth = 0;
  uint64_t sentences = 0, spans = 0, recalls = 0, agreements_across_brackets = 0;
};

// An independent recognizer of the language (docs/DATA.md): brackets nest and match, verbs agree
// with their clause's subject, spans have span_min..span_max tokens, a recall copies the last span
// of its key. Truncation at the document's end is allowed in any state. Returns "" or the fault.
std::string recognize(const SyntheticLayout& l, const SyntheticConfig& c, const int32_t* doc, size_t n, Seen* seen) {
  enum { boundary, pre_verb, after_open, post_verb, span, recall } mode = boundary;
  struct Frame {
    int bracket, number;
    bool had_insert;
  };
  std::vector<Frame> stack;
  std::vector<std::vector<int32_t>> spans(size_t(l.keys));
  std::vector<bool> defined(size_t(l.keys), false);
  std::vector<int32_t> current, expected;
  size_t copy = 0;
  int key = 0;
  auto in = [](int32_t t, int32_t lo, int count) { return t >= lo && t < lo + count; };
  if (n > 0 && doc[0] != l.bos) return "document does not start with BOS";
  for (size_t i = 1; i < n; ++i) {
    const int32_t t = doc[i];
    const std::string at = " at " + std::to_string(i) + " (token " + std::to_string(t) + ")";
    if (t < 0 || t >= l.vocab || t == l.bos) return "bad token" + at;
    const bool background = t >= l.background0;
    switch (mode) {
      case recall:
        if (t != expected[copy]) return "recall differs from its span" + at;
        if (++copy == expected.size()) mode = boundary;
        break;
      case span:
        if (background) {
          current.push_back(t);
          if (int(current.size()) > c.span_max) return "span too long" + at;
        } else if (t == l.span_end) {
          if (int(current.size()) < c.span_min) return "span too short" + at;
          spans[size_t(key)] = current;
          defined[size_t(key)] = true;
          ++seen->spans;
          mode = boundary;
        } else {
          return "unexpected token in a span" + at;
        }
        break;
      case pre_verb:
        if (in(t, l.open0, l.brackets)) {
          stack.back().had_insert = true;
          stack.push_back(Frame{t - l.open0, -1, false});
          if (int(stack.size()) - 1 > c.max_depth) return "nesting deeper than max_depth" + at;
          seen->max_depth = std::max(seen->max_depth, int(stack.size()) - 1);
          mode = after_open;
        } else if (in(t, l.verb0, 2 * l.words)) {
          if ((t - l.verb0) / l.words != stack.back().number) return "verb does not agree" + at;
          if (stack.back().had_insert) ++seen->agreements_across_brackets;
          mode = post_verb;
        } else {
          return "expected OPEN or VERB" + at;
        }
        break;
      case after_open:
        if (!in(t, l.subject0, 2 * l.words)) return "expected a subject after OPEN" + at;
        stack.back().number = (t - l.subject0) / l.words;
        mode = pre_verb;
        break;
      case post_verb:
        if (background) break;  // an object
        if (t == l.end && stack.size() == 1) {
          ++seen->sentences;
          stack.clear();
          mode = boundary;
        } else if (in(t, l.close0, l.brackets) && stack.size() > 1) {
          if (t - l.close0 != stack.back().bracket) return "CLOSE does not match its OPEN" + at;
          stack.pop_back();
          mode = pre_verb;
        } else {
          return "expected an object, END or the matching CLOSE" + at;
        }
        break;
      case boundary:
        if (background) break;  // Markov
        if (in(t, l.subject0, 2 * l.words)) {
          stack.push_back(Frame{-1, (t - l.subject0) / l.words, false});
          mode = pre_verb;
        } else if (in(t, l.mark0, l.keys)) {
          key = t - l.mark0;
          current.clear();
          mode = span;
        } else if (in(t, l.recall0, l.keys)) {
          const int k = t - l.recall0;
          if (!defined[size_t(k)]) return "RECALL of an undefined key" + at;
          expected = spans[size_t(k)];
          copy = 0;
          ++seen->recalls;
          mode = recall;
        } else {
          return "token not allowed between segments" + at;
        }
        break;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("the synthetic stream is a fixed function of its seed: fingerprints are constants") {
  const SyntheticConfig cfg;
  const SyntheticLanguage train(cfg, 256, 1, Split::train);
  const SyntheticLanguage val(cfg, 256, 1, Split::validation);
  const SyntheticLanguage small(cfg, 64, 7, Split::train);
  CHECK(fnv1a(stream(train, 0, 1 << 16).data(), 1 << 16) == 0xd792179a515baa90ull);
  CHECK(fnv1a(stream(val, 0, 1 << 16).data(), 1 << 16) == 0x1de2817da7c9853aull);
  CHECK(fnv1a(stream(small, 0, 1 << 16).data(), 1 << 16) == 0x42239e6ee743fb6full);
  CHECK(stream(train, 0, 4096) != stream(val, 0, 4096));
  CHECK(stream(train, 0, 4096) != stream(SyntheticLanguage(cfg, 256, 2, Split::train), 0, 4096));
}

TEST_CASE("random access equals sequential generation, bit for bit") {
  SyntheticConfig cfg;
  cfg.doc_len = 100;
  const SyntheticLanguage lang(cfg, 128, 3, Split::train);
  const std::vector<int32_t> all = stream(lang, 0, 20000);
  const uint64_t windows[][2] = {{0, 1},       {0, 100},   {1, 99},    {99, 2},   {150, 1000},
                                 {7777, 3333}, {19999, 1}, {12345, 0}, {200, 100}};
  for (const auto& w : windows) {
    const std::vector<int32_t> part = stream(lang, w[0], w[1]);
    CHECK(part == std::vector<int32_t>(all.begin() + int64_t(w[0]), all.begin() + int64_t(w[0] + w[1])));
  }
  // A document prefix is the prefix of the document.
  std::vector<int32_t> doc(100), prefix(37);
  lang.document(5, 100, doc.data());
  lang.document(5, 37, prefix.data());
  CHECK(std::memcmp(doc.data(), all.data() + 500, 400) == 0);
  CHECK(std::memcmp(prefix.data(), doc.data(), 37 * 4) == 0);
  // Far positions are reachable without generating the prefix, and repeatable.
  CHECK(stream(lang, uint64_t{1} << 50, 300) == stream(lang, uint64_t{1} << 50, 300));
}

TEST_CASE("every document parses: nested matching brackets, agreement, spans and exact recalls") {
  for (int vocab : {32, 64, 256, 1000, 5000}) {
    CAPTURE(vocab);
    SyntheticConfig cfg;
    const SyntheticLanguage lang(cfg, vocab, 11, Split::validation);
    const SyntheticLayout& l = lang.layout();
    CHECK(l.background >= 15);
    std::vector<int32_t> doc(cfg.doc_len);
    Seen seen;
    for (uint64_t d = 0; d < 400; ++d) {
      lang.document(d, cfg.doc_len, doc.data());
      const std::string fault = recognize(l, cfg, doc.data(), doc.size(), &seen);
      CHECK_MESSAGE(fault.empty(), "document ", d, ": ", fault);
      if (!fault.empty()) break;
    }
    CHECK(seen.max_depth == cfg.max_depth);
    CHECK(seen.sentences > 1000);
    CHECK(seen.agreements_across_brackets > 300);
    CHECK(seen.spans > 500);
    CHECK(seen.recalls > 300);
  }
}

TEST_CASE("mixture weights and limits are honoured") {
  SyntheticConfig cfg;
  cfg.mix_grammar = cfg.mix_mark = cfg.mix_recall = 0;
  const SyntheticLanguage markov(cfg, 64, 1, Split::train);
  const std::vector<int32_t> x = stream(markov, 0, 64 * 256);
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 256 == 0) {
      CHECK(x[i] == 0);
    } else if (x[i] < markov.layout().background0) {
      FAIL("a non-background token in a Markov-only stream at ", i);
    }
  }
  cfg = SyntheticConfig{};
  cfg.mix_recall = 0;
  cfg.span_min = cfg.span_max = 6;
  const SyntheticLanguage no_recall(cfg, 256, 1, Split::train);
  const SyntheticStats s = synthetic_stats(no_recall, 1 << 16);
  CHECK(s.fraction[int(SegmentKind::recall)] == 0.0);
  CHECK(s.fraction[int(SegmentKind::mark)] > 0.1);
  std::vector<int32_t> doc(cfg.doc_len);
  Seen seen;
  for (uint64_t d = 0; d < 50; ++d) {
    no_recall.document(d, cfg.doc_len, doc.data());
    CHECK(recognize(no_recall.layout(), cfg, doc.data(), doc.size(), &seen).empty());
  }
  CHECK(seen.recalls == 0);
}

TEST_CASE("bad synthetic configurations are errors naming the key") {
  const SyntheticConfig good;
  auto fails = [](SyntheticConfig c, int vocab, const char* needle) {
    try {
      SyntheticLanguage(c, vocab, 1, Split::train);
    } catch (const sb::Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
      return;
    }
    FAIL("no error for ", needle);
  };
  fails(good, 31, "vocab=31");
  SyntheticConfig c = good;
  c.doc_len = 1;
  fails(c, 256, "data.doc_len=1");
  c = good;
  c.mix_grammar = -1;
  fails(c, 256, "data.mix_grammar=-1");
  c = good;
  c.mix_markov = c.mix_grammar = c.mix_mark = 0;
  fails(c, 256, "data.mix_markov, data.mix_grammar and data.mix_mark are all 0");
  c = good;
  c.span_min = 5;
  c.span_max = 4;
  fails(c, 256, "data.span_min=5");
  c = good;
  c.markov_run = 0;
  fails(c, 256, "data.markov_run=0");
  c = good;
  c.max_depth = 17;
  fails(c, 256, "data.max_depth=17");
}

TEST_CASE("statistics: the ideal loss is the true conditional entropy, below the unigram entropy") {
  const SyntheticLanguage val(SyntheticConfig{}, 256, 1, Split::validation);
  const SyntheticStats s = synthetic_stats(val, 1 << 20);
  CHECK(s.tokens == 1 << 20);
  // The sampled -ln p and the mean entropy estimate the same expectation.
  CHECK(std::abs(s.ideal_nll - s.ideal_loss) < 0.01);
  // docs/DATA.md's numbers for the default language (seed 1).
  CHECK(s.unigram_entropy == doctest::Approx(5.4587).epsilon(1e-3));
  CHECK(s.ideal_loss == doctest::Approx(3.4673).epsilon(1e-3));
  double shares = 0;
  for (double f : s.fraction) shares += f;
  CHECK(shares == doctest::Approx(1.0));
  CHECK(s.kind_nll[int(SegmentKind::recall)] < 0.5);
  // The Markov rows' entropy is that of Zipf(1) over the background tokens, below ln B.
  CHECK(val.markov_row_entropy() < std::log(double(val.layout().background)) - 1.0);
}

TEST_CASE("n-gram baselines: structure to learn, and more that needs attention") {
  for (int vocab : {64, 256}) {
    CAPTURE(vocab);
    const SyntheticLanguage train(SyntheticConfig{}, vocab, 1, Split::train);
    const SyntheticLanguage val(SyntheticConfig{}, vocab, 1, Split::validation);
    const std::vector<int32_t> a = stream(train, 0, 1 << 21), b = stream(val, 0, 1 << 18);
    const NgramLosses n = ngram_cross_entropy(a.data(), a.size(), b.data(), b.size(), uint64_t(vocab));
    const SyntheticStats s = synthetic_stats(val, 1 << 18);
    MESSAGE("vocab ", vocab, ": unigram H ", s.unigram_entropy, ", n-gram ", n.unigram, " / ", n.bigram, " / ",
            n.trigram, ", ideal ", s.ideal_loss);
    CHECK(n.unigram == doctest::Approx(s.unigram_entropy).epsilon(0.01));
    CHECK(n.bigram < s.unigram_entropy - 0.5);                  // a bigram model learns something
    CHECK(s.ideal_loss < std::min(n.bigram, n.trigram) - 0.7);  // attention is needed for the rest
  }
}
