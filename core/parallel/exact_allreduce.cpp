// The exact gradient all-reduce and reduce-scatter: collective steps around the accumulator's own
// codec. The wire layout is a function of the MAX-reduced ranges and total_adds, which every rank
// has alike, so every rank passes the same word counts to the SUM (MPI's and NCCL's requirement);
// the reduce-scatter's parts are a function of those and of `need`, the same on every rank too.
#include "samebits/core/parallel/exact_allreduce.hpp"

#include <algorithm>

#include "samebits/det/error.hpp"

namespace sb {

uint64_t* GradAccumulator::encode(uint64_t total_adds, size_t* words) {
  uint64_t w = 0;
  uint64_t* wire = encode(total_adds, {WireRun{0, segments()}}, &w);
  *words = static_cast<size_t>(w);
  return wire;
}

void GradAccumulator::decode(uint64_t total_adds, uint32_t total_status) {
  decode(total_adds, total_status, {WireRun{0, segments()}}, 0);
}

int64_t GradAccumulator::segments() const { return det::wire_segments(static_cast<int64_t>(size())); }

void exact_allreduce(GradAccumulator& acc, Communicator& comm, uint64_t total_adds, uint32_t total_status) {
  comm.allreduce_max_u8(acc.block_ranges(), acc.range_bytes());
  // In a world of one the SUM is the identity and decode would rebuild the same sums, adds and
  // status: the wire is neither written nor summed, only its words are counted as that SUM's
  // payload, so the counters equal every world size's.
  if (comm.size() == 1) {
    comm.count_allreduce_sum_u64(acc.wire_words(total_adds));
    return;
  }
  size_t words = 0;
  uint64_t* wire = acc.encode(total_adds, &words);
  comm.allreduce_sum_u64(wire, words);
  acc.decode(total_adds, total_status);
}

void exact_allreduce_prefix(GradAccumulator& acc, Communicator& comm, size_t n, uint64_t total_adds,
                            uint32_t total_status) {
  SB_CHECK(n <= acc.size(), "exact all-reduce of the first ", n, " elements of a gradient of ", acc.size());
  constexpr size_t kElements = size_t{det::kWireSegment} * det::kWireBlock;
  const size_t blocks = (acc.size() + det::kWireBlock - 1) / det::kWireBlock;
  const size_t segments = (n + kElements - 1) / kElements;
  const size_t prefix_blocks = std::min(blocks, segments * size_t{det::kWireSegment});
  comm.allreduce_max_u8(acc.block_ranges(), acc.range_bytes() / blocks * prefix_blocks);
  const std::vector<WireRun> runs{WireRun{0, static_cast<int64_t>(segments)}};
  uint64_t words = 0;
  uint64_t* wire = acc.encode(total_adds, runs, &words);
  comm.allreduce_sum_u64(wire, static_cast<size_t>(words));
  acc.decode(total_adds, total_status, runs, 0);
}

std::vector<WireRun> wire_runs(std::vector<TensorSpan> spans, size_t n) {
  constexpr size_t kElements = size_t{det::kWireSegment} * det::kWireBlock;
  std::sort(spans.begin(), spans.end(), [](const TensorSpan& a, const TensorSpan& b) { return a.offset < b.offset; });
  std::vector<WireRun> runs;
  for (const TensorSpan& t : spans) {
    if (t.numel == 0) continue;
    SB_CHECK(t.offset + t.numel <= n, "exact reduce-scatter: span [", t.offset, ", ", t.offset + t.numel,
             ") beyond the gradient's ", n, " elements");
    const auto first = static_cast<int64_t>(t.offset / kElements);
    const auto last = static_cast<int64_t>((t.offset + t.numel - 1) / kElements + 1);
    if (!runs.empty() && first <= runs.back().last) {
      runs.back().last = std::max(runs.back().last, last);
    } else {
      runs.push_back({first, last});
    }
  }
  return runs;
}

void exact_reduce_scatter(GradAccumulator& acc, Communicator& comm, uint64_t total_adds, uint32_t total_status,
                          const std::vector<std::vector<TensorSpan>>& need) {
  const int world = comm.size(), me = comm.rank();
  SB_CHECK(need.size() == static_cast<size_t>(world), "exact reduce-scatter: ", need.size(), " parts for a world of ",
           world, " ranks");
  comm.allreduce_max_u8(acc.block_ranges(), acc.range_bytes());
  std::vector<WireRun> runs;                                         // every rank's runs, rank after rank
  std::vector<size_t> first_run(static_cast<size_t>(world) + 1, 0);  // rank r: runs [first_run[r], first_run[r + 1])
  std::vector<WireRun> mine;
  for (int r = 0; r < world; ++r) {
    std::vector<WireRun> part = wire_runs(need[size_t(r)], acc.size());
    if (r == me) mine = part;
    runs.insert(runs.end(), part.begin(), part.end());
    first_run[size_t(r) + 1] = runs.size();
  }
  std::vector<uint64_t> run_words(runs.size());
  uint64_t* wire = acc.encode(total_adds, runs, run_words.data());
  std::vector<size_t> counts(static_cast<size_t>(world), 0);
  size_t first_word = 0;
  for (int r = 0; r < world; ++r) {
    for (size_t k = first_run[size_t(r)]; k < first_run[size_t(r) + 1]; ++k) counts[size_t(r)] += run_words[k];
    if (r < me) first_word += counts[size_t(r)];
  }
  comm.reduce_scatter_sum_u64(wire, counts.data());
  // In a world of one the part is the whole of `need` and the SUM the identity, as above.
  if (world > 1) acc.decode(total_adds, total_status, mine, first_word);
}

}  // namespace sb
