// The exact reduce-scatter (parallel/exact_allreduce.hpp) on 1-7 simulated ranks (
// samebits/core/parallel/thread_world.hpp), directly and through the host-staged communicator: random partitions of the
// leaves over the ranks and of the gradient into owned spans; every rank's elements of its spans
// round to the bits of one accumulator holding every leaf, and of the exact all-reduce; NaN, Inf
// and beyond-the-window values set the same status on every rank; the bytes each rank receives
// are its part only.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/core/parallel/launch.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_point.hpp"

namespace {

using Leaves = std::vector<std::vector<float>>;  // (leaves, n)
using Need = std::vector<std::vector<sb::TensorSpan>>;

// Gradient-like values over a wide range, with zeros, -0, subnormals, values below the window
// and next to its top, alternating signs; `special` adds one NaN, one Inf and one 2^28.
Leaves make_leaves(std::mt19937_64& rng, size_t n, int count, bool special) {
  std::uniform_int_distribution<int> kind(0, 15), expo(-60, 20);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Leaves leaves(static_cast<size_t>(count), std::vector<float>(n));
  for (std::vector<float>& l : leaves) {
    for (size_t i = 0; i < n; ++i) {
      const int k = kind(rng);
      float x = std::ldexp(normal(rng), expo(rng));
      if (k == 0) x = 0.0f;
      if (k == 1) x = -0.0f;
      if (k == 2) x = std::numeric_limits<float>::denorm_min() * float(1 + i % 7);
      if (k == 3) x = std::ldexp(1.0f, -120) * ((i & 1) ? -1.0f : 1.0f);
      if (k == 4) x = std::ldexp(1.5f, 25) * ((i & 1) ? -1.0f : 1.0f);
      l[i] = x;
    }
  }
  if (special && n >= 3) {
    std::uniform_int_distribution<size_t> at(0, n - 1);
    std::uniform_int_distribution<size_t> leaf(0, size_t(count) - 1);
    leaves[leaf(rng)][at(rng)] = std::numeric_limits<float>::quiet_NaN();
    leaves[leaf(rng)][at(rng)] = -std::numeric_limits<float>::infinity();
    leaves[leaf(rng)][at(rng)] = std::ldexp(1.0f, 28);
  }
  return leaves;
}

// [0, n) cut into 1-12 spans (offsets multiples of 16, as the model's layout, or of 1), each
// given to a random rank; some ranks may need nothing.
Need make_need(std::mt19937_64& rng, size_t n, int world) {
  std::uniform_int_distribution<int> pieces(1, 12), owner(0, world - 1), align(0, 1);
  const size_t unit = align(rng) ? 16 : 1;
  std::vector<size_t> cuts{0, n};
  std::uniform_int_distribution<size_t> cut(0, n / unit);
  for (int p = pieces(rng); p > 1; --p) cuts.push_back(std::min(n, cut(rng) * unit));
  std::sort(cuts.begin(), cuts.end());
  Need need(static_cast<size_t>(world));
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    if (cuts[k + 1] > cuts[k]) need[size_t(owner(rng))].push_back({cuts[k], cuts[k + 1] - cuts[k]});
  }
  return need;
}

struct RankResult {
  std::vector<uint32_t> bits;  // (n) the rounded gradient (only the need spans are compared)
  uint32_t status = 0;
  bool round_threw = false;
  sb::CommCounters traffic;
};

// Every rank's accumulator gets the leaves owner[l] == r; then the exact reduce-scatter (need)
// or, with need empty, the exact all-reduce.
std::vector<RankResult> run_world(const Leaves& leaves, const std::vector<int>& owner, int world, const Need& need,
                                  bool staged) {
  const size_t n = leaves[0].size();
  sb::ThreadWorld threads(world);
  std::vector<std::unique_ptr<sb::Communicator>> comms;
  for (int r = 0; r < world; ++r) comms.push_back(threads.rank(r));
  std::vector<RankResult> out(static_cast<size_t>(world));
  sb::run_ranks(world, [&](int r) {
    omp_set_num_threads(1 + r % 2);
    const std::unique_ptr<sb::Backend> be = sb::make_cpu_backend();
    std::unique_ptr<sb::Communicator> comm = std::move(comms[size_t(r)]);
    if (staged) comm = sb::make_staged_communicator(std::move(comm), *be);
    const std::unique_ptr<sb::GradAccumulator> acc = be->make_accumulator(n);
    for (size_t l = 0; l < leaves.size(); ++l)
      if (owner[l] == r) acc->add(leaves[l].data());
    uint64_t adds = acc->adds();
    uint32_t status = acc->status();
    comm->allreduce_sum_u64(&adds, 1);
    comm->allreduce_or_u32(&status, 1);
    const sb::CommCounters before = comm->counters();
    if (need.empty()) {
      sb::exact_allreduce(*acc, *comm, adds, status);
    } else {
      sb::exact_reduce_scatter(*acc, *comm, adds, status, need);
    }
    RankResult& res = out[size_t(r)];
    res.traffic = comm->counters() - before;
    res.status = acc->status();
    std::vector<float> g(n);
    try {
      acc->round(g.data(), 1.0f);
    } catch (const sb::Error&) {
      res.round_threw = true;
    }
    for (size_t i = 0; i < n; ++i) res.bits.push_back(sb::det::bits_of(g[i]));
  });
  return out;
}

constexpr size_t kReduceScatter = static_cast<size_t>(sb::Collective::reduce_scatter);
constexpr size_t kSum = static_cast<size_t>(sb::Collective::allreduce_u64);

}  // namespace

TEST_CASE("wire_runs: the segments that hold the spans, ascending and merged") {
  constexpr size_t S = size_t{sb::det::kWireSegment} * sb::det::kWireBlock;  // elements per segment
  using sb::TensorSpan;
  const auto runs = [](std::vector<TensorSpan> spans, size_t n) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const sb::WireRun& r : sb::wire_runs(std::move(spans), n)) out.emplace_back(r.first, r.last);
    return out;
  };
  using V = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(runs({}, 10 * S).empty());
  CHECK(runs({{5, 0}}, 10 * S).empty());
  CHECK(runs({{0, 1}}, 10 * S) == V{{0, 1}});
  CHECK(runs({{S - 1, 2}}, 10 * S) == V{{0, 2}});                            // straddles two segments
  CHECK(runs({{5 * S, S}, {0, 16}, {S, 16}}, 10 * S) == V{{0, 2}, {5, 6}});  // sorted, adjacent merged
  CHECK(runs({{3 * S, 10}, {3 * S + 20, 10}}, 10 * S) == V{{3, 4}});         // one segment, two spans
  CHECK(runs({{9 * S, S}}, 10 * S) == V{{9, 10}});
  CHECK_THROWS_AS(sb::wire_runs({{9 * S, S + 1}}, 10 * S), sb::Error);
}

TEST_CASE("exact reduce-scatter on 1-7 simulated ranks: each rank's spans have the all-reduce's bits") {
  std::mt19937_64 rng(16);
  for (const size_t n : {size_t{1}, size_t{37}, size_t{2048}, size_t{2049}, size_t{9000}, size_t{20000}}) {
    for (int world = 1; world <= 7; ++world) {
      CAPTURE(n);
      CAPTURE(world);
      const int count = 1 + int(rng() % 9);
      const Leaves leaves = make_leaves(rng, n, count, false);
      std::vector<int> owner(leaves.size());  // random partition; ranks may get no leaf
      for (int& o : owner) o = int(rng() % uint64_t(world));
      const std::vector<int> one(leaves.size(), 0);
      const std::vector<RankResult> ref = run_world(leaves, one, 1, {}, false);
      REQUIRE_FALSE(ref[0].round_threw);
      const std::vector<RankResult> all = run_world(leaves, owner, world, {}, false);
      const Need need = make_need(rng, n, world);
      const bool staged = (n + size_t(world)) % 2 == 0;
      CAPTURE(staged);
      const std::vector<RankResult> rs = run_world(leaves, owner, world, need, staged);
      uint64_t received = 0;
      for (int r = 0; r < world; ++r) {
        CHECK(all[size_t(r)].bits == ref[0].bits);
        size_t wrong = 0;
        for (const sb::TensorSpan& t : need[size_t(r)])
          for (size_t i = t.offset; i < t.offset + t.numel; ++i) wrong += rs[size_t(r)].bits[i] != ref[0].bits[i];
        CHECK(wrong == 0);
        CHECK_FALSE(rs[size_t(r)].round_threw);
        // The payload is every rank's part; this rank receives its own.
        const sb::CommCounters& c = rs[size_t(r)].traffic;
        CHECK(c.bytes[kReduceScatter] == rs[0].traffic.bytes[kReduceScatter]);
        CHECK(c.received[kReduceScatter] <= c.bytes[kReduceScatter]);
        CHECK(c.bytes[kSum] == 0);
        received += c.received[kReduceScatter];
      }
      CHECK(received == rs[0].traffic.bytes[kReduceScatter]);
      // Every segment someone needs travels at least once; the all-reduce sends each once.
      if (world == 1) CHECK(received <= all[0].traffic.bytes[kSum]);
    }
  }
}

TEST_CASE("exact reduce-scatter: NaN, Inf and beyond-the-window values give every rank the same status") {
  std::mt19937_64 rng(61);
  for (int world = 1; world <= 7; ++world) {
    CAPTURE(world);
    const size_t n = 5000;
    const Leaves leaves = make_leaves(rng, n, 6, true);
    std::vector<int> owner(leaves.size());
    for (int& o : owner) o = int(rng() % uint64_t(world));
    const std::vector<RankResult> ref = run_world(leaves, std::vector<int>(leaves.size(), 0), 1, {}, false);
    REQUIRE(ref[0].status == (sb::det::kFixedNaN | sb::det::kFixedInf | sb::det::kFixedOverflow));
    const std::vector<RankResult> rs = run_world(leaves, owner, world, make_need(rng, n, world), world % 2 == 0);
    for (const RankResult& r : rs) {
      CHECK(r.status == ref[0].status);
      CHECK(r.round_threw);
    }
  }
}

TEST_CASE("exact reduce-scatter: the parts must match the world") {
  sb::ThreadWorld threads(1);
  const std::unique_ptr<sb::Communicator> comm = threads.rank(0);
  const std::unique_ptr<sb::Backend> be = sb::make_cpu_backend();
  const std::unique_ptr<sb::GradAccumulator> acc = be->make_accumulator(100);
  CHECK_THROWS_AS(sb::exact_reduce_scatter(*acc, *comm, 0, 0, Need(2)), sb::Error);
}

TEST_CASE("encode and decode by runs: any order and repeats to encode, ascending runs inside the wire to decode") {
  constexpr size_t S = size_t{sb::det::kWireSegment} * sb::det::kWireBlock;
  const std::unique_ptr<sb::Backend> be = sb::make_cpu_backend();
  const std::unique_ptr<sb::GradAccumulator> acc = be->make_accumulator(3 * S);
  std::vector<float> g(3 * S);
  for (size_t i = 0; i < g.size(); ++i) g[i] = float(i % 13) - 6.0f;
  acc->add(g.data());
  const std::vector<sb::WireRun> runs = {{2, 3}, {0, 2}, {1, 2}};
  std::vector<uint64_t> words(runs.size());
  acc->encode(1, runs, words.data());
  CHECK(words[0] > 0);
  CHECK(words[2] > 0);
  CHECK(words[1] > words[2]);  // two segments, the second of them also in runs[2]
  CHECK_THROWS_AS(acc->decode(1, 0, {{1, 2}, {0, 1}}, 0), sb::Error);     // not ascending
  CHECK_THROWS_AS(acc->decode(1, 0, {{0, 3}}, words[0] + 1), sb::Error);  // beyond the wire
  CHECK_THROWS_AS(acc->encode(1, {{0, 4}}, words.data()), sb::Error);     // beyond the segments
  // The words of segment 1 from runs[2], decoded alone: this rank's sums again (one rank: the SUM
  // is the identity).
  acc->encode(1, runs, words.data());
  acc->decode(1, 0, {{1, 2}}, words[0] + words[1]);
  std::vector<float> out(g.size());
  acc->round(out.data(), 1.0f);
  CHECK(std::equal(out.begin(), out.end(), g.begin()));
}
