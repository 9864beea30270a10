// align_streams and compare_aligned (experiments/src/trace_align.cpp) on hand-made op streams:
// insertions, deletions and reorderings within a module are aligned as such, and the origin is the
// first aligned op whose inputs agree and outputs differ, or the first reader of a changed input
// (its source named: an op only one stream runs, or outside the traced ops); the common
// subsequence is a longest one (against the O(n·m) table) and whole GPT-2-sized steps align.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "samebits/cli/trace.hpp"

namespace {

using sb::trace::Row;

// A row at `site` running `op`, reading `in` and writing `out` (hashes), of shape (4).
Row row(const std::string& site, const std::string& op, std::vector<uint64_t> in, std::vector<uint64_t> out) {
  Row r;
  r.site = site;
  r.op = op;
  r.inputs = std::move(in);
  r.outputs = std::move(out);
  r.shape = {4};
  return r;
}

// A small forward: fc1 (t, addmm), act (gelu), fc2 (t, addmm), the loss.
std::vector<Row> forward() {
  return {row("fc1 forward", "aten.t.default float32", {10}, {11}),
          row("fc1 forward", "aten.addmm.default float32", {1, 2, 11}, {12}),
          row("act forward", "aten.gelu.default float32", {12}, {13}),
          row("fc2 forward", "aten.t.default float32", {20}, {21}),
          row("fc2 forward", "aten.addmm.default float32", {3, 13, 21}, {22}),
          row("", "aten.mse_loss.default float32", {22, 5}, {23})};
}

}  // namespace

TEST_CASE("equal streams align one to one and compare identical") {
  const std::vector<Row> a = forward();
  const sb::cli::StreamAlignment al = sb::cli::align_streams(a, a);
  CHECK(al.pairs.size() == a.size());
  CHECK(al.dropped.empty());
  CHECK(al.inserted.empty());
  CHECK(sb::cli::compare_aligned(a, a).identical());
}

TEST_CASE("insertions and deletions: the rows only one stream runs, the rest aligned") {
  std::vector<Row> a = forward(), b = forward();
  // B casts fc1's input first (autocast) and runs one more op at the end; A runs a copy B does not.
  b.insert(b.begin() + 1, row("fc1 forward", "aten._to_copy.default bfloat16", {1}, {1}));
  b.push_back(row("", "aten.div.default float32", {23}, {24}));
  a.insert(a.begin() + 3, row("act forward", "aten.clone.default float32", {13}, {13}));
  const sb::cli::StreamAlignment al = sb::cli::align_streams(a, b);
  CHECK(al.pairs.size() == 6);
  CHECK(al.dropped == std::vector<size_t>{3});
  CHECK(al.inserted == std::vector<size_t>{1, 7});
  CHECK(al.reordered.empty());
  const sb::cli::StreamComparison c = sb::cli::compare_aligned(a, b);
  CHECK_FALSE(c.identical());
  CHECK_FALSE(c.origin.has_value());  // every aligned op equal: the difference is only in the sequence
}

TEST_CASE("a reordering within a module is aligned, not dropped and inserted") {
  std::vector<Row> a = forward(), b = forward();
  // B runs fc2's two ops in the other order (independent ops: a scheduler's freedom).
  std::swap(b[3], b[4]);
  const sb::cli::StreamAlignment al = sb::cli::align_streams(a, b);
  CHECK(al.pairs.size() == a.size());
  CHECK(al.dropped.empty());
  CHECK(al.inserted.empty());
  CHECK(al.reordered.size() == 1);
  CHECK(sb::cli::compare_aligned(a, b).identical());
}

TEST_CASE("the origin: the first aligned op whose inputs agree and outputs differ") {
  std::vector<Row> a = forward(), b = forward();
  b.insert(b.begin(), row("", "aten.detach.default float32", {1}, {1}));
  b[3].outputs = {99};  // act's gelu computes differently in B ...
  b[5].inputs = {3, 99, 21};
  b[5].outputs = {98};  // ... and fc2's addmm reads it
  b[6].inputs = {98, 5};
  b[6].outputs = {97};
  const sb::cli::StreamComparison c = sb::cli::compare_aligned(a, b);
  REQUIRE(c.origin.has_value());
  CHECK(*c.origin == 2);
  CHECK(c.origin_b == 3);
  CHECK(c.origin_kind == "op");
  REQUIRE(c.propagation.size() == 3);
  CHECK(c.propagation[1].row == 4);
  CHECK(c.propagation[2].row == 5);
}

TEST_CASE("an input changed outside the traced ops: the origin is its first reader") {
  std::vector<Row> a = forward(), b = forward();
  b[3].inputs = {40};  // fc2's weight moved between the steps
  b[3].outputs = {41};
  b[4].inputs = {3, 13, 41};
  b[4].outputs = {42};
  b[5].inputs = {42, 5};
  b[5].outputs = {43};
  const sb::cli::StreamComparison c = sb::cli::compare_aligned(a, b);
  REQUIRE(c.origin.has_value());
  CHECK(*c.origin == 3);
  CHECK(c.origin_kind == "input");
  CHECK(c.differing_inputs == std::vector<size_t>{0});
  REQUIRE(c.input_sources.size() == 1);
  CHECK(c.input_sources[0] == "input 0 written outside the traced ops");
}

TEST_CASE("an input written by an op only one stream runs names that op") {
  std::vector<Row> a = forward(), b = forward();
  // B casts fc1's input to bf16 (an op A does not run), and fc1's addmm reads the cast.
  b.insert(b.begin() + 1, row("fc1 forward", "aten._to_copy.default bfloat16", {2}, {50}));
  b[2].inputs = {1, 50, 11};
  b[2].outputs = {51};
  const sb::cli::StreamComparison c = sb::cli::compare_aligned(a, b);
  REQUIRE(c.origin.has_value());
  CHECK(*c.origin == 1);
  CHECK(c.origin_kind == "input");
  REQUIRE(c.input_sources.size() == 1);
  CHECK(c.input_sources[0] ==
        "input 1 written by B's op 1, fc1 forward aten._to_copy.default bfloat16, which A does not run");
}

namespace {

// Rows whose op keys are the letters of `ops` (one site): a stream to align by key alone.
std::vector<Row> stream_of(const std::vector<int>& ops) {
  std::vector<Row> rows;
  for (size_t r = 0; r < ops.size(); ++r) rows.push_back(row("m forward", "op" + std::to_string(ops[r]), {r}, {r}));
  return rows;
}

// The length of a longest common subsequence by the textbook O(n·m) table.
size_t lcs_length(const std::vector<int>& x, const std::vector<int>& y) {
  std::vector<std::vector<size_t>> t(x.size() + 1, std::vector<size_t>(y.size() + 1, 0));
  for (size_t i = 1; i <= x.size(); ++i)
    for (size_t j = 1; j <= y.size(); ++j)
      t[i][j] = x[i - 1] == y[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[x.size()][y.size()];
}

// The aligned pairs that are not reorderings: the common subsequence, checked to be one (ascending
// in both streams, equal keys).
std::vector<std::pair<size_t, size_t>> in_order(const sb::cli::StreamAlignment& al, const std::vector<int>& x,
                                                const std::vector<int>& y) {
  std::vector<std::pair<size_t, size_t>> kept;
  for (const auto& p : al.pairs)
    if (!std::binary_search(al.reordered.begin(), al.reordered.end(), p.first)) kept.push_back(p);
  for (size_t k = 0; k < kept.size(); ++k) {
    CHECK(x[kept[k].first] == y[kept[k].second]);
    if (k > 0) CHECK((kept[k - 1].first < kept[k].first && kept[k - 1].second < kept[k].second));
  }
  return kept;
}

}  // namespace

TEST_CASE("the alignment is a longest common subsequence (against the O(n·m) table), then pairs by key") {
  std::mt19937 rng(46);
  for (int round = 0; round < 300; ++round) {
    std::uniform_int_distribution<int> length(0, 40), letter(0, 1 + round % 6);
    std::vector<int> x(size_t(length(rng))), y(size_t(length(rng)));
    for (int& v : x) v = letter(rng);
    for (int& v : y) v = letter(rng);
    const sb::cli::StreamAlignment al = sb::cli::align_streams(stream_of(x), stream_of(y));
    CHECK(in_order(al, x, y).size() == lcs_length(x, y));
    CHECK(al.pairs.size() + al.dropped.size() == x.size());
    CHECK(al.pairs.size() + al.inserted.size() == y.size());
    for (const auto& [i, j] : al.pairs) CHECK(x[i] == y[j]);
  }
}

TEST_CASE("a whole GPT-2 124M-sized step aligns: 40 000 rows against 45 000 with 13 000 edits, linear memory") {
  // A: 40 000 ops in 4 000 blocks of 10; B: a cast inserted before each block's op 3, op 7 of each
  // block in another dtype (dropped and inserted), one block of 1 000 more ops at the end —
  // far beyond the 6 000 edits a quadratic-memory search could hold.
  std::vector<int> x, y;
  for (int block = 0; block < 4000; ++block) {
    for (int op = 0; op < 10; ++op) {
      x.push_back(op);
      if (op == 3) y.push_back(100);
      y.push_back(op == 7 ? 107 : op);
    }
  }
  for (int op = 0; op < 1000; ++op) y.push_back(200 + op % 10);
  const sb::cli::StreamAlignment al = sb::cli::align_streams(stream_of(x), stream_of(y));
  CHECK(in_order(al, x, y).size() == 36000);
  CHECK(al.reordered.empty());
  CHECK(al.dropped.size() == 4000);
  CHECK(al.inserted.size() == 4000 + 4000 + 1000);
  CHECK(al.dropped[0] == 7);
  CHECK(al.inserted[0] == 3);
}
