// Which communicator and which device a rank uses, as a pure function of what the launcher says
// and how many devices the process sees (plan_communicator), then the communicator itself. The
// communicator follows the backend: CPU ranks talk MPI on host memory; CUDA ranks use NCCL on
// device memory with one GPU per rank, or — when ranks must share a GPU (NCCL refuses duplicate
// devices) — MPI with every device buffer staged through the host. No arithmetic here: every
// choice gives the same bits (the collectives are exact integer SUMs, rule 4).
#pragma once
#include <memory>
#include <string>

#include "samebits/core/backend.hpp"
#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// What the launcher announced; -1 where it said nothing.
struct LaunchEnvironment {
  long world_size = 0;   // 0 when no launcher started this process
  long local_rank = -1;  // this rank's index among the ranks of its node
  long local_size = -1;  // ranks on this node
};
// From the environment: world size as launched_by_mpi() reads it; local rank from
// OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, MPI_LOCALRANKID or PMI_LOCAL_RANK; local size from
// OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS or PMI_LOCAL_SIZE (the first one set of each).
LaunchEnvironment read_launch_environment();

enum class CommunicatorKind : uint8_t {
  local,       // one process
  mpi,         // MPI on host memory (CPU ranks)
  nccl,        // NCCL on device memory, one device per rank
  mpi_staged,  // MPI, device buffers copied to the host and back around each collective
};
const char* to_string(CommunicatorKind kind);  // "local", "mpi", "nccl", "mpi-staged"

struct CommunicatorPlan {
  CommunicatorKind kind = CommunicatorKind::local;
  int device = 0;  // the device index for the backend (0 on the CPU)
};

// The plan for a rank of `backend` (Device::cpu or cuda) seeing `device_count` devices, with
// `requested_device` the configured device (-1: chosen from the local rank). Every rank of a job
// gets the same kind (it depends only on values every rank of a node shares):
//   cpu: local alone, else mpi.
//   cuda alone (no launcher): local on requested_device (or 0).
//   cuda under a launcher: nccl with device = local rank when every rank of the node has its own
//     device (local size ≤ device_count, no requested_device; the world size stands in for an
//     unannounced local size); otherwise mpi_staged, device = requested_device, or the local rank
//     modulo device_count.
// Throws sb::Error when device_count < 1 for cuda, or requested_device is not a visible device.
CommunicatorPlan plan_communicator(Device backend, const LaunchEnvironment& env, int device_count,
                                   int requested_device);

// The plan's communicator for `backend` (made with plan.device). nccl: the backend's peer
// communicator (make_nccl_communicator, nccl_communicator.hpp) over an MPI transport; mpi_staged:
// make_staged_communicator over MPI. Throws sb::Error when the build lacks MPI (or NCCL for nccl)
// and the plan needs it.
std::unique_ptr<Communicator> make_planned_communicator(const CommunicatorPlan& plan, Backend& backend);

// `inner`'s collectives on host copies: each buffer is copied to the host with
// backend.copy_to_host, passed to `inner`, and copied back with backend.copy_from_host (results
// only: broadcast copies back on non-roots, all-gather its output). Buffers are `backend` memory
// or host memory. describe(): "<inner>, <backend device> buffers staged through the host".
std::unique_ptr<Communicator> make_staged_communicator(std::unique_ptr<Communicator> inner, Backend& backend);

}  // namespace sb
