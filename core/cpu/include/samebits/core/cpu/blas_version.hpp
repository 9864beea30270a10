// The vendor BLAS the CPU backend links (numerics.gemm = vendor calls it), for the run file's
// environment record (docs/FORMAT.md, attribute environment).
#pragma once
#include <string>

namespace sb {

// OpenBLAS's own description at run time, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64".
std::string blas_version();

}  // namespace sb
