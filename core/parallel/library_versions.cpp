// library_versions.hpp: MPI's and NCCL's versions at run time, each behind its build switch.
#include "samebits/core/parallel/library_versions.hpp"

#ifdef SB_HAVE_MPI
#include <mpi.h>
#endif
#ifdef SB_HAVE_NCCL
#include <nccl.h>
#endif

namespace sb {

std::string mpi_library_version() {
#ifdef SB_HAVE_MPI
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string s(text, std::size_t(length > 0 ? length : 0));
  s = s.substr(0, s.find_first_of("\r\n"));
  while (!s.empty() && (s.back() == ' ' || s.back() == ',' || s.back() == '\0')) s.pop_back();
  return s;
#else
  return "not built";
#endif
}

std::string nccl_library_version() {
#ifdef SB_HAVE_NCCL
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch; earlier major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000, rest = v >= 10000 ? v % 10000 : v % 1000;
  return std::to_string(major) + "." + std::to_string(rest / 100) + "." + std::to_string(rest % 100);
#else
  return "not built";
#endif
}

}  // namespace sb
