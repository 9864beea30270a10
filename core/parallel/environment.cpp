// Which communicator a process uses (parallel/launch.hpp, parallel/mpi.hpp): local alone; under an MPI
// launcher MPI for CPU ranks, NCCL or host-staged MPI for CUDA ranks. No arithmetic here; the
// choice never changes the bits (the collectives are exact).
#include <cstdlib>

#include "samebits/core/parallel/launch.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/parallel/nccl_communicator.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The first of `names` set in the environment, as a number; -1 when none is set.
long first_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* v = std::getenv(name)) return std::strtol(v, nullptr, 10);
  }
  return -1;
}

// The world size a launcher announced (a lower bound where it announces only the rank), or 0 when
// no launcher started this process.
long launcher_world_size() {
  const long size = first_set({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (size >= 0) return size;
  const long rank = first_set({"PMIX_RANK"});
  return rank >= 0 ? rank + 1 : 0;
}

std::unique_ptr<Communicator> make_mpi_or_fail([[maybe_unused]] long world) {
#ifdef SB_HAVE_MPI
  return make_mpi_communicator();
#else
  SB_CHECK(world <= 1, "this process was started by an MPI launcher with ", world,
           " ranks, but this samebits was built without MPI, so every rank would train alone; "
           "install OpenMPI (libopenmpi-dev openmpi-bin), reconfigure and rebuild, or run one "
           "process without mpirun");
  return make_local_communicator();
#endif
}

}  // namespace

bool launched_by_mpi() { return launcher_world_size() > 0; }

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  env.world_size = launcher_world_size();
  env.local_rank = first_set({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"});
  env.local_size = first_set({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"});
  return env;
}

const char* to_string(CommunicatorKind kind) {
  switch (kind) {
    case CommunicatorKind::local: return "local";
    case CommunicatorKind::mpi: return "mpi";
    case CommunicatorKind::nccl: return "nccl";
    case CommunicatorKind::mpi_staged: return "mpi-staged";
  }
  SB_FAIL("unknown communicator kind ", static_cast<int>(kind));
}

CommunicatorPlan plan_communicator(Device backend, const LaunchEnvironment& env, int device_count,
                                   int requested_device) {
  CommunicatorPlan plan;
  const bool launched = env.world_size > 0;
  if (backend == Device::cpu) {
    plan.kind = launched ? CommunicatorKind::mpi : CommunicatorKind::local;
    return plan;
  }
  SB_CHECK(device_count >= 1, "run.backend=", device_name(backend),
           ": no CUDA device is visible to this process (no GPU, or no driver); use "
           "run.backend=cpu");
  SB_CHECK(requested_device >= -1 && requested_device < device_count, "run.device=", requested_device,
           " is not a visible device: expected 0..", device_count - 1,
           " (or -1: one per rank from the launcher's local rank)");
  if (!launched) {
    plan.device = requested_device >= 0 ? requested_device : 0;
    return plan;
  }
  const long local_rank = env.local_rank >= 0 ? env.local_rank : 0;
  const long local_size = env.local_size >= 1 ? env.local_size : env.world_size;
  if (requested_device < 0 && local_size <= device_count && local_rank < device_count) {
    plan.kind = CommunicatorKind::nccl;
    plan.device = static_cast<int>(local_rank);
    return plan;
  }
  plan.kind = CommunicatorKind::mpi_staged;
  plan.device = requested_device >= 0 ? requested_device : static_cast<int>(local_rank % device_count);
  return plan;
}

std::unique_ptr<Communicator> make_planned_communicator(const CommunicatorPlan& plan, Backend& backend) {
  const long world = launcher_world_size();
  switch (plan.kind) {
    case CommunicatorKind::local: return make_local_communicator();
    case CommunicatorKind::mpi: return make_mpi_or_fail(world);
    case CommunicatorKind::mpi_staged: return make_staged_communicator(make_mpi_or_fail(world), backend);
    case CommunicatorKind::nccl:
      SB_CHECK(backend.device() == Device::cuda, "the communicator plan is nccl, but ", backend.describe(),
               " has no device communicator");
      return make_nccl_communicator(backend, make_mpi_or_fail(world));
  }
  SB_FAIL("unknown communicator kind ", static_cast<int>(plan.kind));
}

std::unique_ptr<Communicator> make_communicator_from_environment() {
  const long world = launcher_world_size();
  return world == 0 ? make_local_communicator() : make_mpi_or_fail(world);
}

void end_job_on_error([[maybe_unused]] Communicator& comm, [[maybe_unused]] std::string_view message,
                      [[maybe_unused]] int exit_code) {
#ifdef SB_HAVE_MPI
  for (Communicator* c = &comm; c != nullptr; c = c->transport()) mpi_abort_job(*c, message, exit_code);
#endif
}

}  // namespace sb
