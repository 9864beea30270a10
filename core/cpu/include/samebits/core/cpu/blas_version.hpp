// The vendor BLAS the CPU backend links (numerics.gemm = vendor calls it), for the run file's
// environment record (docs/FORMAT.md, attribute environment), and the kernel ("core") it runs:
// an OpenBLAS built with DYNAMIC_ARCH picks its kernels by cpuid when it loads, and an OpenBLAS
// older than the CPU may not know it (Debian's 0.3.21 names an Intel Xeon of family 6 model 207
// `Prescott`: generic SSE kernels, 4× slower). OPENBLAS_CORETYPE, read only at load, picks another;
// samebits' command line sets it for itself where the library's choice is below the CPU's ISA
// (experiments/cli/blas_core.cpp). No numerics here: the deterministic paths never call BLAS.
#pragma once
#include <string>

namespace sb {

// OpenBLAS's own description at run time, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64".
std::string blas_version();

// openblas_get_corename(): the kernel set this process runs.
std::string blas_core();

// The best DYNAMIC_ARCH kernel set of OpenBLAS 0.3.21 for this CPU by cpuid: "Cooperlake"
// (AVX-512 with BF16), "SkylakeX" (AVX-512), "Zen" (AMD, AVX2) or "Haswell" (AVX2), "Sandybridge"
// (AVX), or "" (SSE only: nothing better than the library's guess).
std::string blas_core_for_this_cpu();

// The ISA level of an OpenBLAS core name: 3 AVX-512, 2 AVX2, 1 AVX, 0 SSE or unknown.
int blas_core_level(const std::string& core);

// The environment variable with which samebits' command line records the core it replaced.
inline constexpr const char* kBlasCoreReplacedVar = "SAMEBITS_BLAS_CORE_REPLACED";

// One line for records and selftest: the core, who chose it, and this CPU's when it is better, e.g.
// "SkylakeX (set by samebits: OpenBLAS named this CPU Prescott)",
// "Prescott (OPENBLAS_CORETYPE; this CPU's is SkylakeX)", "Zen (OpenBLAS's choice for this CPU)".
std::string blas_core_text();

}  // namespace sb
