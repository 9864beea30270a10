// One rank's bytes to every rank: the length first, then the content, copied verbatim, so values
// packed into them arrive bit for bit (a collective of the communicator; no arithmetic).
#pragma once
#include <cstdint>
#include <vector>

#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// bytes ← root's bytes on every rank (std::byte, uint8_t or char).
template <class Byte>
void broadcast_bytes(std::vector<Byte>& bytes, int root, Communicator& comm) {
  static_assert(sizeof(Byte) == 1, "broadcast_bytes moves bytes");
  uint64_t n = bytes.size();
  comm.broadcast(&n, sizeof(n), root);
  bytes.resize(n);
  comm.broadcast(bytes.data(), n, root);
}

}  // namespace sb
