// What a rank's collectives moved, per kind: the byte accounting every step reports
// (series/comm_bytes) and the run file records, below the communicators that count it
// (parallel/communicator.hpp). Plain data: no arithmetic on any payload.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sb {

// The collective kinds, for byte accounting (series/comm_bytes: bytes per collective kind per step).
enum class Collective : uint8_t {
  allreduce_i64,  // int64 SUM: exact-sum words, owner-side gradient records
  allreduce_u64,  // uint64 SUM: counts, the gradient's block wire (det/block_wire.hpp)
  allreduce_or,   // uint32 bitwise OR: status words
  allreduce_f32,  // float SUM: allreduce=native only
  broadcast,
  allgather,
  barrier,
  allreduce_max,   // uint8 MAX: the exact all-reduce's block ranges (det/block_wire.hpp)
  reduce_scatter,  // uint64 SUM of the block wire, each rank receiving its part
  send,            // point-to-point: tensor parallelism's partial chains (bytes sent / received)
};
constexpr size_t kCollectiveKinds = 10;
std::string_view to_string(Collective c);  // "allreduce_i64", …, "reduce_scatter", "send"

// Per kind: calls made and payload bytes this rank passed in (a buffer of n int64 counts 8n,
// whatever the algorithm moves on the wire; an all-gather counts the bytes this rank sends), and
// the result bytes the collectives delivered to this rank: an all-reduce's whole buffer, a
// reduce-scatter's own part, a broadcast's bytes on the other ranks (0 on the root), an
// all-gather's every rank's part. Both are counted alike at every world size, one included.
struct CommCounters {
  std::array<uint64_t, kCollectiveKinds> calls{};
  std::array<uint64_t, kCollectiveKinds> bytes{};
  std::array<uint64_t, kCollectiveKinds> received{};
  uint64_t total_bytes() const;
  uint64_t total_received() const;
  CommCounters operator-(const CommCounters& earlier) const;  // the traffic since `earlier`
  CommCounters& operator+=(const CommCounters& other);        // two groups' traffic together
};

}  // namespace sb
