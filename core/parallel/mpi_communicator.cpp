// The MPI Communicator (parallel/mpi.hpp): blocking MPI collectives on a duplicate of MPI_COMM_WORLD.
// The integer SUM and OR all-reduces are exact in any reduction order, so their results do not
// depend on the world size or on MPI's algorithm; only allreduce_sum_f32 (allreduce=native) may.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "samebits/core/parallel/mpi.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// MPI's state in this process. MPI is initialised once and finalised when the last communicator
// goes away normally; never after a rank left on an error, because MPI_Finalize waits for the
// other ranks, which may be blocked in a collective that this rank will never join.
struct MpiSession {
  int live = 0;                   // MPI communicators alive
  bool initialised_here = false;  // MPI_Init came from us (otherwise the program finalises it)
  bool failed = false;            // a rank left on an error: the job must not finalise

  static MpiSession& get() {
    static MpiSession session;
    return session;
  }

  void acquire() {
    int finalised = 0;
    MPI_Finalized(&finalised);
    SB_CHECK(!finalised,
             "MPI was already finalised in this process (its last communicator was "
             "destroyed); keep one communicator for the whole job");
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      // Only the thread that built the communicator calls MPI (OpenMP threads never do).
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      SB_CHECK(rc == MPI_SUCCESS, "MPI_Init_thread failed (code ", rc,
               "); check that the job was started with this MPI's mpirun");
      initialised_here = true;
    }
    ++live;
  }

  void release(bool ok) {
    --live;
    if (!ok) failed = true;
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (live == 0 && initialised_here && !failed && !finalised) MPI_Finalize();
  }
};

// MPI counts are int: collectives over more elements go in chunks of this many.
constexpr size_t kChunk = size_t{1} << 28;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() : MpiCommunicator(MPI_COMM_WORLD, true) {}
  // Over `comm` (MPI_COMM_WORLD, duplicated; or a fresh communicator of MPI_Comm_split, owned).
  MpiCommunicator(MPI_Comm comm, bool duplicate) : uncaught_at_start_(std::uncaught_exceptions()), world_(duplicate) {
    MpiSession::get().acquire();
    if (duplicate) {
      check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    } else {
      comm_ = comm;
    }
    // Errors come back as codes and become sb::Error instead of killing the process silently.
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  ~MpiCommunicator() override {
    const bool unwinding = std::uncaught_exceptions() > uncaught_at_start_;
    const bool ok = !unwinding && !failed_;
    if (!ok && size_ > 1 && world_) {  // a sub-communicator's rank has said it as the world's
      std::fprintf(stderr,
                   "samebits: rank %d of %d leaves the job on an error; mpirun ends the other "
                   "ranks\n",
                   rank_, size_);
      std::fflush(stderr);
    }
    if (ok) MPI_Comm_free(&comm_);
    MpiSession::get().release(ok);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "mpi (" + std::to_string(size_) + (size_ == 1 ? " rank)" : " ranks)");
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiCommunicator>(sub, false);
  }

  [[noreturn]] void abort_job(std::string_view message, int exit_code) {
    std::fprintf(stderr, "samebits: rank %d of %d: %.*s\nsamebits: ending all %d ranks of the job\n", rank_, size_,
                 static_cast<int>(message.size()), message.data(), size_);
    std::fflush(stderr);
    failed_ = true;
    MpiSession::get().failed = true;
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this only documents it
  }

 protected:
  void do_allreduce_sum_i64(int64_t* x, size_t n) override {
    allreduce(x, n, MPI_INT64_T, MPI_SUM, "MPI_Allreduce(int64 SUM)");
  }
  void do_allreduce_sum_u64(uint64_t* x, size_t n) override {
    allreduce(x, n, MPI_UINT64_T, MPI_SUM, "MPI_Allreduce(uint64 SUM)");
  }
  void do_allreduce_or_u32(uint32_t* x, size_t n) override {
    allreduce(x, n, MPI_UINT32_T, MPI_BOR, "MPI_Allreduce(uint32 BOR)");
  }
  void do_allreduce_sum_f32(float* x, size_t n) override {
    allreduce(x, n, MPI_FLOAT, MPI_SUM, "MPI_Allreduce(float SUM)");
  }
  void do_allreduce_max_u8(uint8_t* x, size_t n) override {
    allreduce(x, n, MPI_UINT8_T, MPI_MAX, "MPI_Allreduce(uint8 MAX)");
  }
  // MPI_Reduce_scatter into a buffer of this rank's part, then in place at the part's offset.
  void do_reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) override {
    std::vector<int> c(static_cast<size_t>(size_));
    size_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      SB_CHECK(counts[r] <= size_t{INT_MAX}, "reduce-scatter of ", counts[r], " values to rank ", r, "; at most ",
               INT_MAX, " per rank are supported by one MPI_Reduce_scatter");
      c[size_t(r)] = static_cast<int>(counts[r]);
      if (r < rank_) offset += counts[r];
    }
    std::vector<uint64_t> mine(counts[rank_]);
    check(MPI_Reduce_scatter(x, mine.data(), c.data(), MPI_UINT64_T, MPI_SUM, comm_), "MPI_Reduce_scatter(uint64 SUM)");
    std::copy(mine.begin(), mine.end(), x + offset);
  }
  void do_broadcast(void* data, size_t bytes, int root) override {
    auto* p = static_cast<unsigned char*>(data);
    for (size_t done = 0; done < bytes; done += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, bytes - done));
      check(MPI_Bcast(p + done, count, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }
  void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) override {
    SB_CHECK(n <= size_t{INT_MAX}, "allgather of ", n, " values per rank; at most ", INT_MAX,
             " are supported by one MPI_Allgather");
    check(MPI_Allgather(in, static_cast<int>(n), MPI_UINT64_T, out, static_cast<int>(n), MPI_UINT64_T, comm_),
          "MPI_Allgather(uint64)");
  }
  void do_barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
  void do_send(const void* data, size_t bytes, int to) override {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t done = 0; done < bytes; done += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, bytes - done));
      check(MPI_Send(p + done, count, MPI_BYTE, to, 0, comm_), "MPI_Send");
    }
  }
  void do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) override {
    const auto* o = static_cast<const unsigned char*>(out);
    auto* i = static_cast<unsigned char*>(in);
    for (size_t done = 0; done < std::max(out_bytes, in_bytes); done += kChunk) {
      const int n_out = static_cast<int>(done < out_bytes ? std::min(kChunk, out_bytes - done) : 0);
      const int n_in = static_cast<int>(done < in_bytes ? std::min(kChunk, in_bytes - done) : 0);
      check(MPI_Sendrecv(o + (n_out > 0 ? done : 0), n_out, MPI_BYTE, to, 0, i + (n_in > 0 ? done : 0), n_in, MPI_BYTE,
                         from, 0, comm_, MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
    }
  }
  void do_recv(void* data, size_t bytes, int from) override {
    auto* p = static_cast<unsigned char*>(data);
    for (size_t done = 0; done < bytes; done += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, bytes - done));
      check(MPI_Recv(p + done, count, MPI_BYTE, from, 0, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  }

 private:
  template <class T>
  void allreduce(T* x, size_t n, MPI_Datatype type, MPI_Op op, const char* what) {
    for (size_t done = 0; done < n; done += kChunk) {
      const int count = static_cast<int>(std::min(kChunk, n - done));
      check(MPI_Allreduce(MPI_IN_PLACE, x + done, count, type, op, comm_), what);
    }
  }

  void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    failed_ = true;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    SB_FAIL(call, " failed on rank ", rank_, " of ", size_, ": ", std::string(text, size_t(length)),
            "; another rank has probably failed (look for its message above)");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool failed_ = false;
  int uncaught_at_start_ = 0;
  bool world_ = true;  // over MPI_COMM_WORLD (false: a split() group)
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

bool mpi_abort_job(Communicator& comm, std::string_view message, int exit_code) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&comm);
  if (mpi == nullptr || mpi->size() == 1) return false;
  mpi->abort_job(message, exit_code);
}

}  // namespace sb
