// Internal: what the state's broadcasts and gathers (state_broadcast.cpp, sharded_optimizer.cpp,
// plan_pipeline.cpp) share: one rank's ByteWriter bytes (samebits/core/byte_codec.hpp) to every
// rank or to one (broadcast_bytes.hpp), and what a reader says when those bytes end early.
#pragma once
#include "samebits/core/parallel/broadcast_bytes.hpp"

namespace sb::dist_detail {

using sb::broadcast_bytes;  // bytes ← root's bytes on every rank
using sb::recv_bytes;       // bytes ← one rank's send_bytes
using sb::send_bytes;

// What a reader of root's bytes says when they end early: the ranks disagree on what was sent.
inline constexpr const char* kBroadcastHint = "; the ranks run different samebits builds or configurations";

}  // namespace sb::dist_detail
