// The sampler's contract (docs/CONTRACT.md rule 10): the keyed permutation is a bijection fixed by
// its key; an epoch visits every window once; for world sizes 1–4 the ranks' leaves, concatenated
// in rank order, equal the single-process global batch bit for bit; resuming from the cursor of any
// step continues the identical sequence; bad cursors and too-small data are errors.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "samebits/data/permutation.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"

using namespace sb::data;

namespace {

// Tokens i * 7919 mod vocab: every window has distinct contents, so equal tokens mean equal windows.
class CountingSource final : public TokenSource {
 public:
  explicit CountingSource(uint64_t n) : n_(n) {}
  uint64_t size() const override { return n_; }
  uint64_t vocab() const override { return 1u << 30; }
  std::string describe() const override { return "counting source (" + std::to_string(n_) + " tokens)"; }
  void read(uint64_t pos, uint64_t len, int32_t* out) const override {
    SB_CHECK(pos + len <= n_, "counting source: window outside");
    for (uint64_t i = 0; i < len; ++i) out[i] = int32_t(pos + i);
  }

 private:
  uint64_t n_;
};

using sbt::error_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<int32_t> global_batch(const Sampler& s, uint64_t step) {
  std::vector<int32_t> out(s.sequences_per_step() * uint64_t(s.seq_len() + 1));
  s.leaves(step, LeafRange{0, s.leaves()}, out.data());
  return out;
}

}  // namespace

TEST_CASE("keyed_permutation is a bijection of [0, n), fixed by its key") {
  for (uint64_t n : {1ull, 2ull, 3ull, 4ull, 5ull, 17ull, 100ull, 1000ull, 4097ull, 65537ull}) {
    CAPTURE(n);
    std::vector<char> hit(n, 0);
    for (uint64_t x = 0; x < n; ++x) {
      const uint64_t y = keyed_permutation(x, n, 42, 7);
      REQUIRE(y < n);
      CHECK(hit[y] == 0);
      hit[y] = 1;
    }
  }
  // Different keys give different orders; the values are constants of the algorithm.
  uint64_t same_seed = 0, same_stream = 0;
  for (uint64_t x = 0; x < 1000; ++x) {
    same_seed += keyed_permutation(x, 1000, 1, 2) == keyed_permutation(x, 1000, 3, 2);
    same_stream += keyed_permutation(x, 1000, 1, 2) == keyed_permutation(x, 1000, 1, 3);
  }
  CHECK(same_seed < 20);
  CHECK(same_stream < 20);
  CHECK(keyed_permutation(12345, 1000000, 1, 2) == 149721ull);
  CHECK(keyed_permutation(0, uint64_t(-1), 9, 9) == 3311625382258282873ull);
}

TEST_CASE("leaf_range: contiguous, balanced, the first leaves % world ranks get one more") {
  for (int leaves = 0; leaves <= 9; ++leaves) {
    for (int world = 1; world <= 5; ++world) {
      int next = 0;
      for (int r = 0; r < world; ++r) {
        const LeafRange lr = leaf_range(leaves, world, r);
        CHECK(lr.begin == next);
        CHECK(lr.count() == leaves / world + (r < leaves % world ? 1 : 0));
        next = lr.end;
      }
      CHECK(next == leaves);
    }
  }
  CHECK(contains(error_of([] { leaf_range(4, 2, 2); }), "rank=2"));
}

TEST_CASE("an epoch reads every window once; the order is a fixed function of (seed, epoch)") {
  const CountingSource src(1001);  // seq_len 10: W = 100 windows
  const Sampler s(src, 10, 2, 5, 99);
  REQUIRE(s.windows() == 100);
  std::vector<int32_t> seq(11);
  for (uint64_t e = 0; e < 3; ++e) {
    std::set<uint64_t> seen;
    for (uint64_t p = 0; p < 100; ++p) {
      const uint64_t k = e * 100 + p;
      s.sequence(k, seq.data());
      CHECK(seq[0] == int32_t(10 * s.window(k)));
      for (int i = 0; i < 11; ++i) CHECK(seq[size_t(i)] == seq[0] + i);  // inputs + next-token targets
      seen.insert(s.window(k));
    }
    CHECK(seen.size() == 100);
  }
  CHECK(s.window(0) != s.window(100));  // each epoch its own order
  std::vector<uint64_t> first;
  for (uint64_t k = 0; k < 8; ++k) first.push_back(s.window(k));
  CHECK(first == std::vector<uint64_t>{77, 51, 2, 37, 23, 53, 40, 65});
  // A different seed reorders.
  const Sampler other(src, 10, 2, 5, 100);
  uint64_t same = 0;
  for (uint64_t k = 0; k < 100; ++k) same += s.window(k) == other.window(k);
  CHECK(same < 10);
}

TEST_CASE("world sizes 1-4: the ranks' leaves in rank order are the global batch, bit for bit") {
  const CountingSource src(5000);
  for (int leaves : {1, 3, 4, 7, 8}) {
    for (int leaf_size : {1, 3}) {
      const Sampler s(src, 16, leaf_size, leaves, 5);
      for (uint64_t step : {0ull, 1ull, 13ull, 200ull}) {
        const std::vector<int32_t> global = global_batch(s, step);
        // Leaf by leaf, too.
        std::vector<int32_t> one(size_t(leaf_size) * 17);
        for (int l = 0; l < leaves; ++l) {
          s.leaf(step, l, one.data());
          CHECK(std::memcmp(one.data(), global.data() + size_t(l) * one.size(), one.size() * 4) == 0);
        }
        for (int world = 1; world <= 4; ++world) {
          std::vector<int32_t> joined;
          for (int r = 0; r < world; ++r) {
            const LeafRange lr = leaf_range(leaves, world, r);
            std::vector<int32_t> part(size_t(lr.count()) * one.size());
            // A rank builds its own sampler over its own source: nothing is shared.
            const CountingSource own(5000);
            Sampler(own, 16, leaf_size, leaves, 5).leaves(step, lr, part.data());
            joined.insert(joined.end(), part.begin(), part.end());
          }
          CAPTURE(world);
          REQUIRE(joined.size() == global.size());
          CHECK(std::memcmp(joined.data(), global.data(), global.size() * 4) == 0);
        }
      }
    }
  }
}

TEST_CASE("resume from the cursor of any step continues the identical sequence") {
  const CountingSource src(701);  // seq_len 7: W = 100 windows, an epoch every 100/6 steps
  const Sampler a(src, 7, 2, 3, 11);
  std::vector<std::vector<int32_t>> run;
  for (uint64_t step = 0; step < 60; ++step) run.push_back(global_batch(a, step));
  for (uint64_t step = 0; step < 60; ++step) {
    const DataCursor c = a.cursor(step);
    CHECK(c.epoch == step * 6 / 100);
    CHECK(c.position == step * 6 % 100);
    const DataCursor stored{c.epoch, c.position};  // what a checkpoint writes and reads back
    const CountingSource fresh(701);
    const Sampler b(fresh, 7, 2, 3, 11);
    const uint64_t resumed = b.step_of(stored);
    REQUIRE(resumed == step);
    for (uint64_t s = resumed; s < 60; ++s) {
      const std::vector<int32_t> batch = global_batch(b, s);
      CHECK(std::memcmp(batch.data(), run[s].data(), batch.size() * 4) == 0);
    }
  }
  // A cursor that does not fit this sampler is an error that says why.
  CHECK(contains(error_of([&] { a.step_of(DataCursor{0, 5}); }), "not at a step boundary"));
  CHECK(contains(error_of([&] { a.step_of(DataCursor{0, 100}); }), "the data changed"));
  const SyntheticLanguage lang(SyntheticConfig{}, 64, 1, Split::train);
  const Sampler syn(lang, 256, 1, 4, 1);
  CHECK(syn.cursor(3) == DataCursor{0, 12});
  CHECK(syn.step_of(DataCursor{0, 12}) == 3);
  CHECK(contains(error_of([&] { syn.step_of(DataCursor{1, 0}); }), "single endless epoch"));
}

TEST_CASE("the synthetic source: sequence k is window k, whole documents when seq_len = doc_len") {
  const SyntheticLanguage lang(SyntheticConfig{}, 256, 1, Split::train);
  const Sampler s(lang, 256, 2, 4, 1);
  CHECK(s.windows() == TokenSource::kInfinite);
  std::vector<int32_t> seq(257), doc(256);
  for (uint64_t k : {0ull, 1ull, 5ull, 1000ull}) {
    s.sequence(k, seq.data());
    lang.document(k, 256, doc.data());
    CHECK(std::memcmp(seq.data(), doc.data(), 256 * 4) == 0);
    CHECK(seq[256] == lang.layout().bos);  // the target after the last token: the next BOS
  }
}

TEST_CASE("the validation set is the first windows in order; too little data is an error") {
  const CountingSource src(101);
  const ValidationSet v(src, 10, 10);
  std::vector<int32_t> seq(11);
  v.sequence(9, seq.data());
  CHECK(seq[0] == 90);
  CHECK(seq[10] == 100);
  CHECK(contains(error_of([&] { ValidationSet(src, 10, 11); }), "fewer than 11 sequences"));
  CHECK(contains(error_of([&] { v.sequence(10, seq.data()); }), "outside [0, 10)"));
}

TEST_CASE("bad sampler parameters and data smaller than one sequence are errors") {
  const CountingSource tiny(100);
  CHECK(contains(error_of([&] { Sampler(tiny, 100, 1, 1, 1); }),
                 "counting source (100 tokens): 100 tokens, fewer than one sequence of seq_len + 1 = 101"));
  CHECK(contains(error_of([&] { Sampler(tiny, 0, 1, 1, 1); }), "model.seq_len=0"));
  CHECK(contains(error_of([&] { Sampler(tiny, 9, 0, 1, 1); }), "data.leaf_size=0"));
  CHECK(contains(error_of([&] { Sampler(tiny, 9, 1, 0, 1); }), "data.leaves=0"));
  const Sampler s(tiny, 99, 1, 2, 1);
  CHECK(s.windows() == 1);
  std::vector<int32_t> out(100);
  CHECK(contains(error_of([&] { s.leaf(0, 2, out.data()); }), "leaf 2 outside [0, 2)"));
}
