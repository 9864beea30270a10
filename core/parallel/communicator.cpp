// The Communicator's shared part: argument checks and byte accounting around each collective.
// No arithmetic on the payload happens here (implementations own the reductions).
#include "samebits/core/parallel/communicator.hpp"

#include <cstring>
#include <vector>

#include "samebits/det/error.hpp"

namespace sb {

void Communicator::count(Collective c, size_t bytes, size_t received) {
  const auto k = static_cast<size_t>(c);
  counters_.calls[k] += 1;
  counters_.bytes[k] += bytes;
  counters_.received[k] += received;
}

void Communicator::allreduce_sum_i64(int64_t* x, size_t n) {
  count(Collective::allreduce_i64, n * sizeof(int64_t), n * sizeof(int64_t));
  if (n > 0) do_allreduce_sum_i64(x, n);
}

void Communicator::allreduce_sum_u64(uint64_t* x, size_t n) {
  count(Collective::allreduce_u64, n * sizeof(uint64_t), n * sizeof(uint64_t));
  if (n > 0) do_allreduce_sum_u64(x, n);
}

void Communicator::count_allreduce_sum_u64(size_t n) {
  SB_CHECK(size() == 1, "count_allreduce_sum_u64 counts an identity SUM (a world of one), not one of ", size(),
           " ranks");
  count(Collective::allreduce_u64, n * sizeof(uint64_t), n * sizeof(uint64_t));
}

void Communicator::allreduce_or_u32(uint32_t* x, size_t n) {
  count(Collective::allreduce_or, n * sizeof(uint32_t), n * sizeof(uint32_t));
  if (n > 0) do_allreduce_or_u32(x, n);
}

void Communicator::allreduce_sum_f32(float* x, size_t n) {
  count(Collective::allreduce_f32, n * sizeof(float), n * sizeof(float));
  if (n > 0) do_allreduce_sum_f32(x, n);
}

void Communicator::allreduce_max_u8(uint8_t* x, size_t n) {
  count(Collective::allreduce_max, n, n);
  if (n > 0) do_allreduce_max_u8(x, n);
}

void Communicator::reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) {
  size_t total = 0;
  for (int r = 0; r < size(); ++r) total += counts[r];
  count(Collective::reduce_scatter, total * sizeof(uint64_t), counts[rank()] * sizeof(uint64_t));
  if (total > 0) do_reduce_scatter_sum_u64(x, counts);
}

void Communicator::broadcast(void* data, size_t bytes, int root) {
  SB_CHECK(root >= 0 && root < size(), "broadcast from root ", root, " in a world of ", size(),
           " ranks; the root must be in [0, ", size(), ")");
  count(Collective::broadcast, bytes, root == rank() ? 0 : bytes);
  if (bytes > 0) do_broadcast(data, bytes, root);
}

void Communicator::allgather_u64(const uint64_t* in, size_t n, uint64_t* out) {
  count(Collective::allgather, n * sizeof(uint64_t), n * sizeof(uint64_t) * static_cast<size_t>(size()));
  if (n > 0) do_allgather_u64(in, n, out);
}

void Communicator::send(const void* data, size_t bytes, int to) {
  SB_CHECK(to >= 0 && to < size() && to != rank(), "send to rank ", to, " from rank ", rank(), " of ", size());
  count(Collective::send, bytes, 0);
  if (bytes > 0) do_send(data, bytes, to);
}

void Communicator::recv(void* data, size_t bytes, int from) {
  SB_CHECK(from >= 0 && from < size() && from != rank(), "receive from rank ", from, " on rank ", rank(), " of ",
           size());
  count(Collective::send, 0, bytes);
  if (bytes > 0) do_recv(data, bytes, from);
}

void Communicator::exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) {
  SB_CHECK(to >= 0 && to < size() && to != rank() && from >= 0 && from < size() && from != rank(), "exchange to rank ",
           to, " and from rank ", from, " on rank ", rank(), " of ", size());
  count(Collective::send, out_bytes, in_bytes);
  do_exchange(out, out_bytes, to, in, in_bytes, from);
}

void Communicator::alltoallv(const void* out, const size_t* send_bytes, void* in, const size_t* in_bytes) {
  const int n = size(), me = rank();
  std::vector<size_t> send_at(size_t(n) + 1, 0), in_at(size_t(n) + 1, 0);
  for (int r = 0; r < n; ++r) {
    send_at[size_t(r) + 1] = send_at[size_t(r)] + send_bytes[r];
    in_at[size_t(r) + 1] = in_at[size_t(r)] + in_bytes[r];
  }
  const auto* from = static_cast<const unsigned char*>(out);
  auto* to = static_cast<unsigned char*>(in);
  SB_CHECK(send_bytes[me] == in_bytes[me], "all-to-all: rank ", me, " sends itself ", send_bytes[me],
           " bytes and expects ", in_bytes[me]);
  // Round k pairs rank r with rank (k − r) mod n, each pair once in the n rounds and both of a pair
  // in the same round, so every exchange is with one peer both ways (as MPI_Sendrecv's chunks pair).
  for (int k = 0; k < n; ++k) {
    const int peer = ((k - me) % n + n) % n;
    if (peer == me) {
      if (in_bytes[me] > 0) std::memcpy(to + in_at[size_t(me)], from + send_at[size_t(me)], in_bytes[me]);
      continue;
    }
    exchange(from + send_at[size_t(peer)], send_bytes[peer], peer, to + in_at[size_t(peer)], in_bytes[peer], peer);
  }
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  (void)color, (void)key;
  SB_FAIL("the communicator '", describe(),
          "' has no sub-communicators; tensor and pipeline parallelism "
          "(parallel.tp, parallel.pp > 1) need MPI ranks (mpirun)");
}

void Communicator::do_send(const void* data, size_t bytes, int to) {
  (void)data, (void)bytes, (void)to;
  SB_FAIL("the communicator '", describe(),
          "' has no point-to-point transport; tensor parallelism "
          "(parallel.tp > 1) needs MPI ranks (mpirun)");
}

void Communicator::do_recv(void* data, size_t bytes, int from) { do_send(data, bytes, from); }

void Communicator::do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) {
  (void)in, (void)in_bytes, (void)from;
  do_send(out, out_bytes, to);
}

void Communicator::barrier() {
  count(Collective::barrier, 0, 0);
  do_barrier();
}

}  // namespace sb
