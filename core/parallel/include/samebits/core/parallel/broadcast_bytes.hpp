// One rank's bytes to every rank, or to one: the length first, then the content, copied verbatim,
// so values packed into them arrive bit for bit (no arithmetic).
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

// bytes → rank `to` (point to point; it calls recv_bytes with this rank as `from`).
template <class Byte>
void send_bytes(const std::vector<Byte>& bytes, int to, Communicator& comm) {
  static_assert(sizeof(Byte) == 1, "send_bytes moves bytes");
  const uint64_t n = bytes.size();
  comm.send(&n, sizeof(n), to);
  comm.send(bytes.data(), n, to);
}

// bytes ← what rank `from` passed to send_bytes.
template <class Byte>
void recv_bytes(std::vector<Byte>& bytes, int from, Communicator& comm) {
  static_assert(sizeof(Byte) == 1, "recv_bytes moves bytes");
  uint64_t n = 0;
  comm.recv(&n, sizeof(n), from);
  bytes.resize(n);
  comm.recv(bytes.data(), n, from);
}

}  // namespace sb
