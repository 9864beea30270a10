// The NCCL communicator in a world of MPI_COMM_WORLD's ranks (one rank, without MPI, under plain
// ctest; more under mpirun with one GPU each): integer SUMs, OR, float SUM, broadcast, all-gather and barrier
// on device and host buffers give the expected values. Exits 77 without a GPU or without NCCL.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/parallel/nccl_communicator.hpp"
#include "support/gpu.hpp"

#if defined(SB_HAVE_MPI)
#include <mpi.h>
#endif

namespace {

TEST_CASE("NCCL collectives on host and device buffers") {
  sb::test::require_gpu();
#if defined(SB_HAVE_MPI)
  if (!sb::nccl_available()) sb::test::skip("this build has no NCCL");
  int rank = 0, size = 1;
  if (sb::launched_by_mpi()) {  // alone, the communicator needs no MPI (a world of one)
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(nullptr, nullptr);
      std::atexit([] { MPI_Finalize(); });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  if (size > sb::cuda_device_count()) sb::test::skip("fewer GPUs than MPI ranks");
  auto be = sb::make_cuda_backend(sb::Numerics::deterministic(), rank);
  auto comm = sb::make_nccl_communicator(*be);
  CHECK(comm->rank() == rank);
  CHECK(comm->size() == size);
  const int64_t world = size, rank_sum = static_cast<int64_t>(size) * (size - 1) / 2;

  // int64 SUM, host buffer: rank r contributes (r + 1)·(i + 1) − 2^40.
  std::vector<int64_t> h(1000);
  for (size_t i = 0; i < h.size(); ++i) h[i] = (rank + 1) * static_cast<int64_t>(i + 1) - (int64_t{1} << 40);
  comm->allreduce_sum_i64(h.data(), h.size());
  for (size_t i = 0; i < h.size(); ++i)
    REQUIRE(h[i] == (rank_sum + world) * static_cast<int64_t>(i + 1) - world * (int64_t{1} << 40));

  // int64 SUM, device buffer (in place).
  sb::Tensor d = be->alloc(sb::DType::i64, {777});
  std::vector<int64_t> hd(777, rank - 5);
  be->copy_from_host(d.data(), hd.data(), hd.size() * sizeof(int64_t));
  comm->allreduce_sum_i64(d.data_as<int64_t>(), hd.size());
  be->copy_to_host(hd.data(), d.data(), hd.size() * sizeof(int64_t));
  for (int64_t v : hd) REQUIRE(v == rank_sum - 5 * world);

  uint64_t count = 3;
  comm->allreduce_sum_u64(&count, 1);
  CHECK(count == 3u * static_cast<uint64_t>(size));
  uint32_t bits = 1u << (rank % 3);
  comm->allreduce_or_u32(&bits, 1);
  CHECK(bits == (size >= 3 ? 7u : size == 2 ? 3u : 1u));
  float f = 0.5f;
  comm->allreduce_sum_f32(&f, 1);
  CHECK(f == 0.5f * static_cast<float>(size));
  std::vector<char> msg(13, static_cast<char>('a' + rank));
  comm->broadcast(msg.data(), msg.size(), size - 1);
  for (char ch : msg) REQUIRE(ch == static_cast<char>('a' + size - 1));
  const uint64_t mine[2] = {static_cast<uint64_t>(rank), 100u + static_cast<uint64_t>(rank)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(size));
  comm->allgather_u64(mine, 2, all.data());
  for (int r = 0; r < size; ++r) {
    CHECK(all[2 * r] == static_cast<uint64_t>(r));
    CHECK(all[2 * r + 1] == 100u + static_cast<uint64_t>(r));
  }
  comm->barrier();
  CHECK(comm->counters().calls[static_cast<size_t>(sb::Collective::allreduce_i64)] == 2);
#else
  sb::test::skip("this build has no MPI");
#endif
}

}  // namespace
