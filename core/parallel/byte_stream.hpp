// Internal: what the state's broadcasts and gathers (state_broadcast.cpp, sharded_optimizer.cpp,
// plan_pipeline.cpp) share: one rank's ByteWriter bytes (samebits/core/byte_codec.hpp) to every
// rank or to one (broadcast_bytes.hpp), what a reader says when those bytes end early, and the
// encoding of a list of optimizer state arrays.
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/byte_codec.hpp"
#include "samebits/core/parallel/broadcast_bytes.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::dist_detail {

using sb::broadcast_bytes;  // bytes ← root's bytes on every rank
using sb::recv_bytes;       // bytes ← one rank's send_bytes
using sb::send_bytes;

// What a reader of root's bytes says when they end early: the ranks disagree on what was sent.
inline constexpr const char* kBroadcastHint = "; the ranks run different samebits builds or configurations";

// The arrays `keep` accepts: their count, then each one's name and values.
template <class Keep>
void put_arrays(ByteWriter& w, const std::vector<StateArray>& arrays, Keep keep) {
  uint64_t count = 0;
  for (const StateArray& a : arrays) count += keep(a) ? 1 : 0;
  w.put(count);
  for (const StateArray& a : arrays) {
    if (!keep(a)) continue;
    w.put_string(a.name);
    w.put_vector(a.data);
  }
}
inline void put_arrays(ByteWriter& w, const std::vector<StateArray>& arrays) {
  put_arrays(w, arrays, [](const StateArray&) { return true; });
}
// What put_arrays wrote.
inline std::vector<StateArray> get_arrays(ByteReader& r) {
  std::vector<StateArray> arrays(r.get<uint64_t>());
  for (StateArray& a : arrays) {
    a.name = r.get_string();
    a.data = r.get_vector<float>();
  }
  return arrays;
}

}  // namespace sb::dist_detail
