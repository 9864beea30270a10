// The NCCL Communicator (docs/DISTRIBUTED.md): one rank per GPU, launched by mpirun; the NCCL
// unique id travels from rank 0 by MPI_Bcast (a process started without mpirun and without MPI
// is a world of one). The exact all-reduce is ncclInt64 ncclSum (two's-complement addition: any
// world size, any ring or tree order, the same integers).
#pragma once
#include <memory>

#include "samebits/core/backend.hpp"
#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// Whether this build has NCCL and MPI (make_nccl_communicator works).
bool nccl_available();

// A communicator over MPI_COMM_WORLD's ranks, running its collectives on `cuda_backend`'s device
// and stream (so they follow the backend's kernels in order). MPI must be initialised. Buffers may
// be device memory of that backend (used in place) or host memory (staged through the device).
// `transport`, when given, is the MPI communicator that initialised MPI: the NCCL communicator
// keeps it (MPI stays up until after ncclCommDestroy) and names it as its transport() (for
// end_job_on_error). Throws sb::Error when NCCL or MPI is missing from the build, or when NCCL
// fails.
std::unique_ptr<Communicator> make_nccl_communicator(Backend& cuda_backend,
                                                     std::unique_ptr<Communicator> transport = nullptr);

}  // namespace sb
