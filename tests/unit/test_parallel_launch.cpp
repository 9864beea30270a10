// The communicator follows the backend (parallel/launch.hpp): the plan as a pure function of the
// launcher's environment and the device count, and the host-staged communicator's bookkeeping
// through the CPU backend (every collective's buffer to the host and back, counted by the
// backend; results the inner communicator's).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/launch.hpp"
#include "samebits/det/error.hpp"

using sb::CommunicatorKind;
using sb::Device;
using sb::LaunchEnvironment;

namespace {

sb::CommunicatorPlan plan(Device d, LaunchEnvironment env, int devices, int requested = -1) {
  return sb::plan_communicator(d, env, devices, requested);
}

}  // namespace

TEST_CASE("CPU ranks: local alone, MPI under a launcher") {
  CHECK(plan(Device::cpu, {}, 1).kind == CommunicatorKind::local);
  CHECK(plan(Device::cpu, {4, 2, 4}, 1).kind == CommunicatorKind::mpi);
  CHECK(plan(Device::cpu, {1, 0, 1}, 0).kind == CommunicatorKind::mpi);
}

TEST_CASE("CUDA ranks: NCCL with one GPU per local rank, host-staged MPI when they must share") {
  const auto alone = plan(Device::cuda, {}, 2);
  CHECK(alone.kind == CommunicatorKind::local);
  CHECK(alone.device == 0);
  CHECK(plan(Device::cuda, {}, 2, 1).device == 1);
  // mpirun -np 4 on a node of 4 GPUs, rank 2 of it.
  const auto nccl = plan(Device::cuda, {4, 2, 4}, 4);
  CHECK(nccl.kind == CommunicatorKind::nccl);
  CHECK(nccl.device == 2);
  // Two nodes of 2 ranks and 2 GPUs: the local size decides, not the world size.
  CHECK(plan(Device::cuda, {4, 1, 2}, 2).kind == CommunicatorKind::nccl);
  CHECK(plan(Device::cuda, {4, 1, 2}, 2).device == 1);
  // No local size announced: the world size stands in (one node assumed).
  CHECK(plan(Device::cuda, {2, 1, -1}, 2).kind == CommunicatorKind::nccl);
  CHECK(plan(Device::cuda, {3, 1, -1}, 2).kind == CommunicatorKind::mpi_staged);
  // mpirun -np 3 on one GPU: every rank staged, all on device 0.
  for (long r = 0; r < 3; ++r) {
    const auto p = plan(Device::cuda, {3, r, 3}, 1);
    CHECK(p.kind == CommunicatorKind::mpi_staged);
    CHECK(p.device == 0);
  }
  // 3 ranks on 2 GPUs: staged, spread over the devices.
  CHECK(plan(Device::cuda, {3, 2, 3}, 2).device == 0);
  CHECK(plan(Device::cuda, {3, 1, 3}, 2).device == 1);
  // A configured device: every rank on it, so more than one rank must share it.
  CHECK(plan(Device::cuda, {2, 1, 2}, 4, 3).kind == CommunicatorKind::mpi_staged);
  CHECK(plan(Device::cuda, {2, 1, 2}, 4, 3).device == 3);
  // One rank under mpirun: NCCL (a world of one).
  CHECK(plan(Device::cuda, {1, 0, 1}, 1).kind == CommunicatorKind::nccl);
}

TEST_CASE("CUDA without a device, or a device that is not there, is a clear error") {
  CHECK_THROWS_WITH_AS(plan(Device::cuda, {}, 0), doctest::Contains("no CUDA device"), sb::Error);
  CHECK_THROWS_WITH_AS(plan(Device::cuda, {}, 2, 2), doctest::Contains("run.device=2"), sb::Error);
  CHECK(std::string(sb::to_string(CommunicatorKind::mpi_staged)) == "mpi-staged");
}

TEST_CASE("the launch environment is read from the launchers' variables") {
  ::setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "5", 1);
  LaunchEnvironment env = sb::read_launch_environment();
  CHECK(env.world_size == 6);
  CHECK(env.local_rank == 4);
  CHECK(env.local_size == 5);
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ::setenv("SLURM_LOCALID", "3", 1);
  CHECK(sb::read_launch_environment().local_rank == 3);
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_LOCALID"}) ::unsetenv(v);
  env = sb::read_launch_environment();
  CHECK(env.world_size == 0);
  CHECK(env.local_rank == -1);
}

TEST_CASE("the host-staged communicator copies each buffer to the host and back, counted") {
  const auto be = sb::make_cpu_backend();
  auto comm = sb::make_staged_communicator(sb::make_local_communicator(), *be);
  CHECK(comm->describe() == "local, cpu buffers staged through the host");
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  REQUIRE(comm->transport() != nullptr);
  CHECK(comm->transport()->describe() == "local");
  sb::Tensor limbs = be->alloc(sb::DType::i64, {10});
  std::vector<int64_t> host{1, -2, 3, 4, 5, 6, 7, 8, 9, -10};
  be->copy_from_host(limbs.data(), host.data(), 80);
  const sb::HostTraffic start = be->host_traffic();
  comm->allreduce_sum_i64(limbs.data_as<int64_t>(), 10);
  sb::HostTraffic t = be->host_traffic() - start;
  CHECK(t.to_host == 80);
  CHECK(t.from_host == 80);
  CHECK(std::vector<int64_t>(limbs.data_as<int64_t>(), limbs.data_as<int64_t>() + 10) == host);
  uint32_t status = 6;
  comm->allreduce_or_u32(&status, 1);
  CHECK(status == 6);
  char data[5] = {'a', 'b', 'c', 'd', 'e'};
  const sb::HostTraffic before_bcast = be->host_traffic();
  comm->broadcast(data, 5, 0);  // the root: to the host only
  t = be->host_traffic() - before_bcast;
  CHECK(t.to_host == 5);
  CHECK(t.from_host == 0);
  const uint64_t in[2] = {11, 12};
  uint64_t out[2] = {0, 0};
  comm->allgather_u64(in, 2, out);
  CHECK(out[0] == 11);
  CHECK(out[1] == 12);
  // The staged communicator's counters and its transport's count the same payload.
  const auto k = static_cast<size_t>(sb::Collective::allreduce_i64);
  CHECK(comm->counters().bytes[k] == 80);
  CHECK(comm->transport()->counters().bytes[k] == 80);
  CHECK_THROWS_AS(comm->broadcast(data, 5, 1), sb::Error);
}
