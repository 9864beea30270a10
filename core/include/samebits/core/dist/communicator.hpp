// Communicator: the only way the trainer talks to other ranks (docs/ARCHITECTURE.md: the trainer
// knows neither the backend nor the world size). Integer collectives are exact, so results do not
// depend on the world size or arrival order (rule 4); the float SUM exists only for allreduce=native.
// Implementations: local (one process, here), MPI and NCCL (core/dist/mpi_*.cpp, nccl_*.cpp).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sb {

// The collective kinds, for byte accounting (series/comm_bytes: bytes per collective kind per step).
enum class Collective : uint8_t {
  allreduce_i64,  // int64 SUM: gradient limbs, exact-sum words
  allreduce_u64,  // uint64 SUM: counts
  allreduce_or,   // uint32 bitwise OR: status words
  allreduce_f32,  // float SUM: allreduce=native only
  broadcast,
  allgather,
  barrier,
  allreduce_max,   // uint8 MAX: the exact all-reduce's block ranges (det/block_wire.hpp)
  reduce_scatter,  // int64 SUM, each rank receiving its part
};
constexpr size_t kCollectiveKinds = 9;
std::string_view to_string(Collective c);  // "allreduce_i64", …, "reduce_scatter"

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
};

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
  // x[i] ← OR over ranks of x[i].  x: (n).
  void allreduce_or_u32(uint32_t* x, size_t n);
  // x[i] ← float SUM over ranks in the implementation's order (MPI/NCCL's own): the vendor path
  // of allreduce=native, whose bits may depend on the world size.  x: (n).
  void allreduce_sum_f32(float* x, size_t n);
  // x[i] ← max over ranks of x[i].  x: (n).
  void allreduce_max_u8(uint8_t* x, size_t n);
  // Rank r's part x[o_r, o_r + counts[r]) ← Σ_ranks of that part, o_r = Σ_{q<r} counts[q]; the
  // other parts of x are left unspecified. Exact (int64 addition). x: (Σ counts), counts: (size()).
  // The payload counted is the whole x, as for an all-reduce of it; received: rank r's part.
  void reduce_scatter_sum_i64(int64_t* x, const size_t* counts);
  // data ← root's data on every rank.  data: (bytes).
  void broadcast(void* data, size_t bytes, int root);
  // out[r·n + i] = rank r's in[i].  in: (n), out: (size(), n).
  void allgather_u64(const uint64_t* in, size_t n, uint64_t* out);
  void barrier();

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
  virtual void do_reduce_scatter_sum_i64(int64_t* x, const size_t* counts) = 0;
  virtual void do_broadcast(void* data, size_t bytes, int root) = 0;
  virtual void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) = 0;
  virtual void do_barrier() = 0;

 private:
  void count(Collective c, size_t bytes, size_t received);
  CommCounters counters_;
};

// One process: rank 0 of 1; every collective leaves its buffer as it is (copies for all-gather).
std::unique_ptr<Communicator> make_local_communicator();

}  // namespace sb
