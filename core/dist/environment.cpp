// Which communicator a process uses (dist/mpi.hpp): MPI under an MPI launcher, local otherwise.
// No arithmetic here; the choice never changes the bits (the collectives are exact).
#include <cstdlib>

#include "samebits/core/dist/mpi.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The world size a launcher announced (a lower bound where it announces only the rank), or 0 when
// no launcher started this process.
long launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::strtol(v, nullptr, 10);
  }
  if (const char* rank = std::getenv("PMIX_RANK")) return std::strtol(rank, nullptr, 10) + 1;
  return 0;
}

}  // namespace

bool launched_by_mpi() { return launcher_world_size() > 0; }

std::unique_ptr<Communicator> make_communicator_from_environment() {
  const long world = launcher_world_size();
  if (world == 0) return make_local_communicator();
#ifdef SB_HAVE_MPI
  return make_mpi_communicator();
#else
  SB_CHECK(world == 1, "this process was started by an MPI launcher with ", world,
           " ranks, but this samebits was built without MPI, so every rank would train alone; "
           "install OpenMPI (libopenmpi-dev openmpi-bin), reconfigure and rebuild, or run one "
           "process without mpirun");
  return make_local_communicator();
#endif
}

void end_job_on_error([[maybe_unused]] Communicator& comm,
                      [[maybe_unused]] std::string_view message, [[maybe_unused]] int exit_code) {
#ifdef SB_HAVE_MPI
  mpi_abort_job(comm, message, exit_code);
#endif
}

}  // namespace sb
