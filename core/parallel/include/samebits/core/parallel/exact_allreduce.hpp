// The exact gradient all-reduce (docs/DISTRIBUTED.md §7): every rank ends with the exact sum over
// all ranks of its GradAccumulator — the same integers for any world size, partition and MPI/NCCL
// algorithm — at about 1.2-1.3× the bytes of a float all-reduce (det/block_wire.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// Collective: MAX all-reduce of the block ranges, encode, uint64 SUM all-reduce of the words,
// decode. total_adds / total_status: the SUM of adds() and the OR of status() over all ranks.
void exact_allreduce(GradAccumulator& acc, Communicator& comm, uint64_t total_adds, uint32_t total_status);

// Collective: exact_allreduce of the wire segments that hold acc's first n elements only (n ≤ its
// size); the ranks' accumulators may differ beyond those segments (a pipeline's first and last
// stage, whose tied wte leads both: gpt_tp_layout pads it to whole segments). Afterwards those
// segments hold the exact sums over all ranks, adds() = total_adds (the SUM of adds() over the
// ranks, as for exact_allreduce).
void exact_allreduce_prefix(GradAccumulator& acc, Communicator& comm, size_t n, uint64_t total_adds,
                            uint32_t total_status);

// Collective: the exact reduce-scatter of the same wire (docs/DISTRIBUTED.md §7). need[r]: the
// elements rank r needs (spans of acc, any order; the same on every rank). Rank r's part is the
// wire of the segments that hold its spans (a segment two ranks need travels in both parts), so
// each rank receives only its part; after it, every element of a segment that holds one of
// need[rank] has the exact sum over all ranks — bitwise exact_allreduce's — and the others this
// rank's own sums. One MAX all-reduce of the block ranges, one reduce-scatter of the words.
void exact_reduce_scatter(GradAccumulator& acc, Communicator& comm, uint64_t total_adds, uint32_t total_status,
                          const std::vector<std::vector<TensorSpan>>& need);

// The wire segments that hold `spans` of a vector of n elements: ascending, disjoint, adjacent
// ones merged. Throws sb::Error for a span beyond n.
std::vector<WireRun> wire_runs(std::vector<TensorSpan> spans, size_t n);

}  // namespace sb
