// Communicator: the only way the trainer talks to other ranks (docs/ARCHITECTURE.md: the trainer
// knows neither the backend nor the world size). Integer collectives are exact, so results do not
// depend on the world size or arrival order (rule 4); the float SUM exists only for allreduce=native.
// Implementations: local, MPI and NCCL (core/parallel/local_communicator.cpp, mpi_communicator.cpp,
// nccl_communicator.cpp).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "samebits/core/comm_counters.hpp"

namespace sb {

// Every rank calls the same collectives in the same order with the same sizes (as MPI requires).
// Buffers are host memory or memory of the device the communicator serves; an implementation that
// needs device memory (NCCL) stages host buffers itself. All calls block until the result is in
// place. Errors (a peer that died, a size mismatch) throw sb::Error and never hang.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string describe() const = 0;  // "local", "mpi (4 ranks)", "nccl (8 ranks)"

  // x[i] ← Σ_ranks x[i]: exact (two's-complement int64 addition is associative).  x: (n).
  void allreduce_sum_i64(int64_t* x, size_t n);
  // x[i] ← Σ_ranks x[i] modulo 2^64.  x: (n).
  void allreduce_sum_u64(uint64_t* x, size_t n);
  // In a world of one, where that SUM is the identity: counted as allreduce_sum_u64 of n words,
  // with no buffer and nothing moved (the exact all-reduce's wire, never written there).
  void count_allreduce_sum_u64(size_t n);
  // x[i] ← OR over ranks of x[i].  x: (n).
  void allreduce_or_u32(uint32_t* x, size_t n);
  // x[i] ← float SUM over ranks in the implementation's order (MPI/NCCL's own): the vendor path
  // of allreduce=native, whose bits may depend on the world size.  x: (n).
  void allreduce_sum_f32(float* x, size_t n);
  // x[i] ← max over ranks of x[i].  x: (n).
  void allreduce_max_u8(uint8_t* x, size_t n);
  // Rank r's part x[o_r, o_r + counts[r]) ← Σ_ranks of that part, o_r = Σ_{q<r} counts[q]; the
  // other parts of x are left unspecified, the sum modulo 2^64. x: (Σ counts), counts: (size()).
  // The payload counted is the whole x, as for an all-reduce of it; received: rank r's part.
  void reduce_scatter_sum_u64(uint64_t* x, const size_t* counts);
  // data ← root's data on every rank.  data: (bytes).
  void broadcast(void* data, size_t bytes, int root);
  // out[r·n + i] = rank r's in[i].  in: (n), out: (size(), n).
  void allgather_u64(const uint64_t* in, size_t n, uint64_t* out);
  void barrier();
  // Point-to-point, blocking: bytes of data to rank `to` / from rank `from` (tensor parallelism's
  // partial chains). Counted as Collective::send: the sender's bytes, the receiver's received.
  void send(const void* data, size_t bytes, int to);
  void recv(void* data, size_t bytes, int from);
  // out_bytes of out to rank `to` while in_bytes arrive from rank `from` into in, as one call that
  // cannot deadlock against the peers' (MPI_Sendrecv; pipeline stages' paired transfers).
  // Counted as Collective::send.
  void exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from);
  // The all-to-all of variable parts (MPI_Alltoallv), bytes moved bit for bit: rank r's part for
  // rank q is send_bytes[q] bytes of `out` (the parts one after another in rank order) and arrives
  // as its r-th part of `in` (in_bytes[r] bytes each, the parts likewise in rank order). Every
  // rank's in_bytes[r] must equal rank r's send_bytes[it]. Run as paired exchanges, each with one
  // peer both ways (round k: rank r with rank (k − r) mod size()), the own part copied; counted as
  // Collective::send (bytes to and from the other ranks).
  void alltoallv(const void* out, const size_t* send_bytes, void* in, const size_t* in_bytes);
  // The communicator of the ranks that pass the same `color`, ranked by (key, rank) (MPI_Comm_split).
  // Collective over this communicator. Implementations without sub-communicators throw sb::Error.
  virtual std::unique_ptr<Communicator> split(int color, int key);

  // The communicator this one runs its collectives over (the MPI transport of a host-staged or an
  // NCCL communicator), or null; end_job_on_error follows it to the MPI communicator.
  virtual Communicator* transport() { return nullptr; }

  // Traffic since construction (or reset_counters()).
  const CommCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = CommCounters{}; }

 protected:
  // What an implementation provides; the public calls above count the traffic, then call these.
  virtual void do_allreduce_sum_i64(int64_t* x, size_t n) = 0;
  virtual void do_allreduce_sum_u64(uint64_t* x, size_t n) = 0;
  virtual void do_allreduce_or_u32(uint32_t* x, size_t n) = 0;
  virtual void do_allreduce_sum_f32(float* x, size_t n) = 0;
  virtual void do_allreduce_max_u8(uint8_t* x, size_t n) = 0;
  virtual void do_reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) = 0;
  virtual void do_broadcast(void* data, size_t bytes, int root) = 0;
  virtual void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) = 0;
  virtual void do_barrier() = 0;
  // Default: sb::Error naming describe() (this communicator has no point-to-point transport).
  virtual void do_send(const void* data, size_t bytes, int to);
  virtual void do_recv(void* data, size_t bytes, int from);
  virtual void do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from);

 private:
  void count(Collective c, size_t bytes, size_t received);
  CommCounters counters_;
};

// One process: rank 0 of 1; every collective leaves its buffer as it is (copies for all-gather).
std::unique_ptr<Communicator> make_local_communicator();

}  // namespace sb
