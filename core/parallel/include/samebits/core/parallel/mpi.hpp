// The communicator a process gets from its launcher: MPI (OpenMPI, MPICH, srun with PMI) across
// the ranks of `mpirun -np N samebits …`, the local one otherwise. The exact collectives make
// the results independent of the world size (docs/CONTRACT.md rule 4); this file only decides
// who talks to whom and how a failing rank ends the job.
#pragma once
#include <memory>
#include <string_view>

#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// True when an MPI launcher started this process: OMPI_COMM_WORLD_SIZE (Open MPI's mpirun),
// PMI_SIZE (MPICH's Hydra) or PMIX_RANK (PMIx, e.g. srun --mpi=pmix) is set.
bool launched_by_mpi();

// The job's CPU communicator (train_run plans by backend: parallel/launch.hpp): under an MPI launcher, an MPI
// communicator over every rank of the job (MPI is initialised on the first call and finalised when the last MPI
// communicator is destroyed normally); a local one otherwise. Throws sb::Error when a launcher started more than one
// rank and this samebits was built without MPI (every rank would train alone and write the same file).
//
// Failure handling: a rank whose MPI communicator is destroyed while an exception unwinds the
// stack (an sb::Error on that rank) does not finalise MPI; the process then exits non-zero and
// mpirun ends every other rank within seconds, even those blocked in a collective. A command that
// catches the error itself must call end_job_on_error() before destroying the communicator.
std::unique_ptr<Communicator> make_communicator_from_environment();

// After an error on this rank: with an MPI communicator of more than one rank, prints
// "samebits: rank r of N: <message>" to stderr and ends every rank of the job (MPI_Abort with
// exit_code) — it does not return. With any other communicator it returns at once and the caller
// reports the error as usual.
void end_job_on_error(Communicator& comm, std::string_view message, int exit_code);

#ifdef SB_HAVE_MPI
// An MPI communicator over MPI_COMM_WORLD (a duplicate of it), initialising MPI if needed.
std::unique_ptr<Communicator> make_mpi_communicator();
// end_job_on_error's MPI part: does not return when comm is an MPI communicator of more than one
// rank; returns false otherwise (nothing happened).
bool mpi_abort_job(Communicator& comm, std::string_view message, int exit_code);
#endif

}  // namespace sb
