// The HDF5 library this samebits runs with, for the run file's environment record (docs/FORMAT.md,
// attribute environment): what an evaluator compares when a file reads differently.
#pragma once
#include <string>

namespace sb::io {

// "1.10.8" (the library linked at run time, H5get_libversion).
std::string hdf5_version();

}  // namespace sb::io
