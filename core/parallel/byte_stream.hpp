// Internal: one rank's ByteWriter bytes (samebits/core/byte_codec.hpp) to every rank, for the
// state broadcasts (state_broadcast.cpp, sharded_optimizer.cpp): its length first, then the
// content, copied verbatim, so values arrive bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "samebits/core/parallel/communicator.hpp"

namespace sb::dist_detail {

// bytes ← root's bytes on every rank.
inline void broadcast_bytes(std::vector<std::byte>& bytes, int root, Communicator& comm) {
  uint64_t n = bytes.size();
  comm.broadcast(&n, sizeof(n), root);
  bytes.resize(n);
  comm.broadcast(bytes.data(), n, root);
}

// What a reader of root's bytes says when they end early: the ranks disagree on what was sent.
inline constexpr const char* kBroadcastHint = "; the ranks run different samebits builds or configurations";

}  // namespace sb::dist_detail
