// library_version.hpp: the run-time HDF5 version.
#include "samebits/core/io/library_version.hpp"

#include <hdf5.h>

namespace sb::io {

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace sb::io
