// Internal: what the state broadcasts (state_broadcast.cpp, sharded_optimizer.cpp) share: one
// rank's ByteWriter bytes (samebits/core/byte_codec.hpp) to every rank (broadcast_bytes.hpp), and
// what a reader says when those bytes end early.
#pragma once
#include "samebits/core/parallel/broadcast_bytes.hpp"

namespace sb::dist_detail {

using sb::broadcast_bytes;  // bytes ← root's bytes on every rank

// What a reader of root's bytes says when they end early: the ranks disagree on what was sent.
inline constexpr const char* kBroadcastHint = "; the ranks run different samebits builds or configurations";

}  // namespace sb::dist_detail
