// The byte accounting of the collectives (comm_counters.hpp): names and sums of counters.
#include "samebits/core/comm_counters.hpp"

#include "samebits/det/error.hpp"

namespace sb {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::allreduce_i64: return "allreduce_i64";
    case Collective::allreduce_u64: return "allreduce_u64";
    case Collective::allreduce_or: return "allreduce_or";
    case Collective::allreduce_f32: return "allreduce_f32";
    case Collective::broadcast: return "broadcast";
    case Collective::allgather: return "allgather";
    case Collective::barrier: return "barrier";
    case Collective::allreduce_max: return "allreduce_max";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::send: return "send";
  }
  SB_FAIL("unknown collective kind ", static_cast<int>(c));
}

uint64_t CommCounters::total_bytes() const {
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  return total;
}

uint64_t CommCounters::total_received() const {
  uint64_t total = 0;
  for (uint64_t b : received) total += b;
  return total;
}

CommCounters CommCounters::operator-(const CommCounters& earlier) const {
  CommCounters d;
  for (size_t k = 0; k < kCollectiveKinds; ++k) {
    d.calls[k] = calls[k] - earlier.calls[k];
    d.bytes[k] = bytes[k] - earlier.bytes[k];
    d.received[k] = received[k] - earlier.received[k];
  }
  return d;
}

CommCounters& CommCounters::operator+=(const CommCounters& other) {
  for (size_t k = 0; k < kCollectiveKinds; ++k) {
    calls[k] += other.calls[k];
    bytes[k] += other.bytes[k];
    received[k] += other.received[k];
  }
  return *this;
}

}  // namespace sb
