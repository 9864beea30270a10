// The instruction set that runs the exact GEMM (numerics.gemm = exact) on this CPU: what benchmarks
// and tests name. Every one computes the same exact integers (core/cpu/exact_gemm.hpp).
#pragma once
#include <string>
#include <vector>

namespace sb {

// "scalar", "avx2", "avx512" (AVX512-VNNI), "onednn" (oneDNN's int8 matmul, any kernel) or "amx"
// (oneDNN on AMX-INT8): SAMEBITS_ISA when set, else the fastest this CPU and build have. Throws
// sb::Error naming SAMEBITS_ISA when it names a path this CPU or build lacks.
std::string exact_gemm_isa();
// Every name SAMEBITS_ISA accepts.
std::vector<std::string> exact_gemm_isa_names();
// Whether SAMEBITS_ISA=name would run here (throws for a name that is no instruction set).
bool exact_gemm_isa_available(const std::string& name);

}  // namespace sb
