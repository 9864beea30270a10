// The communication libraries this samebits was built with, for the run file's environment record
// (docs/FORMAT.md, attribute environment): MPI's library version and NCCL's, or "not built".
#pragma once
#include <string>

namespace sb {

// MPI_Get_library_version's first line (callable before MPI_Init), e.g. "Open MPI v4.1.4, …";
// "not built" without MPI.
std::string mpi_library_version();

// "2.21.5" (ncclGetVersion); "not built" without NCCL.
std::string nccl_library_version();

}  // namespace sb
