// The NCCL Communicator: collectives on the CUDA backend's stream, host buffers staged through a
// device buffer, completion awaited by polling the stream and NCCL's asynchronous error state (a
// dead peer raises sb::Error instead of hanging). Integer SUMs are exact in any order (rule 4);
// the float SUM is NCCL's own order (allreduce=native only); OR is an all-gather then a host OR.
#include "samebits/core/parallel/nccl_communicator.hpp"

#include "samebits/det/error.hpp"

#if defined(SB_HAVE_MPI) && defined(SB_HAVE_NCCL)
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/parallel/mpi.hpp"

#define SB_NCCL_CHECK(call)                                                                                            \
  do {                                                                                                                 \
    const ncclResult_t sb_nccl_status_ = (call);                                                                       \
    if (sb_nccl_status_ != ncclSuccess)                                                                                \
      SB_FAIL("NCCL call ", #call, " failed: ", ncclGetErrorString(sb_nccl_status_), " at ", __FILE__, ":", __LINE__); \
  } while (0)

namespace sb {
namespace {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Backend& backend, std::unique_ptr<Communicator> transport)
      : transport_(std::move(transport)), stream_(cuda_stream(backend)), device_(cuda_device(backend)) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    ncclUniqueId id{};
    if (initialized == 0 && !launched_by_mpi()) {
      SB_NCCL_CHECK(ncclGetUniqueId(&id));  // a world of one: no peers to find
    } else {
      SB_CHECK(initialized != 0,
               "the NCCL communicator finds its peers through MPI: initialise MPI "
               "first (MPI_Init, or the MPI communicator) and launch the ranks with mpirun");
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
      if (rank_ == 0) SB_NCCL_CHECK(ncclGetUniqueId(&id));
      SB_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
               "MPI_Bcast of the NCCL unique id failed on rank ", rank_);
    }
    SB_CUDA_CHECK(cudaSetDevice(device_));
    SB_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  }

  ~NcclCommunicator() override {
    // Destructors cannot throw: teardown errors are dropped.
    cudaSetDevice(device_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    cudaFree(scratch_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Communicator* transport() override { return transport_.get(); }

  std::string describe() const override { return detail::concat("nccl (", size_, " ranks, cuda:", device_, ")"); }

 protected:
  void do_allreduce_sum_i64(int64_t* x, size_t n) override { allreduce(x, n, ncclInt64, 8, ncclSum); }
  void do_allreduce_sum_u64(uint64_t* x, size_t n) override { allreduce(x, n, ncclUint64, 8, ncclSum); }
  void do_allreduce_sum_f32(float* x, size_t n) override { allreduce(x, n, ncclFloat32, 4, ncclSum); }

  void do_allreduce_or_u32(uint32_t* x, size_t n) override {
    const size_t bytes = n * sizeof(uint32_t);
    std::vector<uint32_t> mine(n), all(n * static_cast<size_t>(size_));  // (n), (size, n)
    copy(mine.data(), x, bytes);
    allgather(mine.data(), all.data(), bytes);
    for (int r = 1; r < size_; ++r)
      for (size_t i = 0; i < n; ++i) all[i] |= all[static_cast<size_t>(r) * n + i];
    copy(x, all.data(), bytes);
  }

  void do_allreduce_max_u8(uint8_t* x, size_t n) override { allreduce(x, n, ncclUint8, 1, ncclMax); }

  // ncclReduceScatter wants equal parts: each rank's part padded with zeros to the largest, in
  // the scratch (size, widest); the sum of this rank's part comes back to its offset in x.
  void do_reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) override {
    activate();
    size_t widest = 0, offset = 0, mine = 0;
    for (int r = 0; r < size_; ++r) widest = counts[r] > widest ? counts[r] : widest;
    const size_t part = widest * sizeof(uint64_t), parts = part * static_cast<size_t>(size_);
    char* buf = scratch(parts + part);
    SB_CUDA_CHECK(cudaMemsetAsync(buf, 0, parts, stream_));
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) mine = offset;
      SB_CUDA_CHECK(cudaMemcpyAsync(buf + static_cast<size_t>(r) * part, x + offset, counts[r] * sizeof(uint64_t),
                                    cudaMemcpyDefault, stream_));
      offset += counts[r];
    }
    SB_NCCL_CHECK(ncclReduceScatter(buf, buf + parts, widest, ncclUint64, ncclSum, comm_, stream_));
    wait();
    SB_CUDA_CHECK(cudaMemcpyAsync(x + mine, buf + parts, counts[rank_] * sizeof(uint64_t), cudaMemcpyDefault, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void do_broadcast(void* data, size_t bytes, int root) override {
    activate();
    void* buf = stage_in(data, bytes, 0);
    SB_NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_));
    finish(data, buf, bytes);
  }

  void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) override {
    allgather(in, out, n * sizeof(uint64_t));
  }

  // Pipeline stages' transfers: ncclSend / ncclRecv (NCCL ≥ 2.7) on device memory, staged
  // through the scratch otherwise; the exchange's two calls in one group cannot deadlock.
  void do_send(const void* data, size_t bytes, int to) override { do_exchange(data, bytes, to, nullptr, 0, to); }
  void do_recv(void* data, size_t bytes, int from) override { do_exchange(nullptr, 0, from, data, bytes, from); }
  void do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) override {
    activate();
    scratch(out_bytes + in_bytes);  // grown once, before either part is staged in it
    const void* src = out_bytes > 0 ? stage_in(out, out_bytes, 0) : nullptr;
    void* dst = in_bytes == 0 ? nullptr : on_device(in) ? in : scratch(out_bytes + in_bytes) + out_bytes;
    SB_NCCL_CHECK(ncclGroupStart());
    if (out_bytes > 0) SB_NCCL_CHECK(ncclSend(src, out_bytes, ncclUint8, to, comm_, stream_));
    if (in_bytes > 0) SB_NCCL_CHECK(ncclRecv(dst, in_bytes, ncclUint8, from, comm_, stream_));
    SB_NCCL_CHECK(ncclGroupEnd());
    if (in_bytes > 0) {
      finish(in, dst, in_bytes);
    } else {
      wait();
    }
  }

  void do_barrier() override {
    int64_t zero = 0;
    allreduce(&zero, 1, ncclInt64, 8, ncclSum);
  }

 private:
  void activate() const { SB_CUDA_CHECK(cudaSetDevice(device_)); }

  static bool on_device(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

  // The scratch device buffer, at least `bytes` (grown when needed; only used inside one call).
  char* scratch(size_t bytes) {
    if (scratch_bytes_ < bytes) {
      SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
      SB_CUDA_CHECK(cudaFree(scratch_));
      scratch_ = nullptr;
      scratch_bytes_ = 0;
      SB_CUDA_CHECK(cudaMalloc(&scratch_, bytes));
      scratch_bytes_ = bytes;
    }
    return static_cast<char*>(scratch_);
  }

  // Device memory holding p's bytes: p itself, or the scratch at `offset` filled from the host.
  void* stage_in(const void* p, size_t bytes, size_t offset) {
    if (on_device(p)) return const_cast<void*>(p);
    char* buf = scratch(offset + bytes) + offset;
    SB_CUDA_CHECK(cudaMemcpyAsync(buf, p, bytes, cudaMemcpyHostToDevice, stream_));
    return buf;
  }

  // Waits for the collective (polling NCCL's error state), then copies a staged result back.
  void finish(void* p, const void* buf, size_t bytes) {
    wait();
    if (buf != p) {
      SB_CUDA_CHECK(cudaMemcpyAsync(p, buf, bytes, cudaMemcpyDeviceToHost, stream_));
      SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }

  void wait() {
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) SB_CUDA_CHECK(e);
      ncclResult_t async = ncclSuccess;
      SB_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
      if (async != ncclSuccess) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        SB_FAIL("an NCCL collective failed on rank ", rank_, " of ", size_, ": ", ncclGetErrorString(async),
                " (a peer exited or the interconnect failed)");
      }
      std::this_thread::yield();
    }
  }

  void allreduce(void* x, size_t n, ncclDataType_t type, size_t elem, ncclRedOp_t op) {
    activate();
    void* buf = stage_in(x, n * elem, 0);
    SB_NCCL_CHECK(ncclAllReduce(buf, buf, n, type, op, comm_, stream_));
    finish(x, buf, n * elem);
  }

  // out (size, bytes) ← every rank's in (bytes).
  void allgather(const void* in, void* out, size_t bytes) {
    activate();
    const size_t total = bytes * static_cast<size_t>(size_);
    void* dst = on_device(out) ? out : scratch(total + bytes);
    const void* src = on_device(in) ? in : stage_in(in, bytes, total);
    SB_NCCL_CHECK(ncclAllGather(src, dst, bytes, ncclUint8, comm_, stream_));
    finish(out, dst, total);
  }

  // dst ← src (bytes), each host or device memory.
  void copy(void* dst, const void* src, size_t bytes) {
    activate();
    SB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_));
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::unique_ptr<Communicator> transport_;  // destroyed after comm_ (the destructor's body)
  cudaStream_t stream_;
  int device_;
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace

bool nccl_available() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(Backend& cuda_backend, std::unique_ptr<Communicator> transport) {
  return std::make_unique<NcclCommunicator>(cuda_backend, std::move(transport));
}

}  // namespace sb

#else

namespace sb {

bool nccl_available() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Backend& cuda_backend, std::unique_ptr<Communicator>) {
  SB_FAIL(
      "this samebits build has no NCCL communicator (it needs NCCL and MPI; install "
      "libnccl-dev and libopenmpi-dev, then reconfigure); cannot serve ",
      cuda_backend.describe());
}

}  // namespace sb

#endif
