// The instruction set that runs the exact GEMM (numerics.gemm = exact) on this CPU: what benchmarks
// and tests name. Every one computes the same exact integers (core/cpu/exact_gemm.hpp).
#pragma once
#include <string>

namespace sb {

// "scalar", "avx2" or "avx512" (AVX512-VNNI): SAMEBITS_ISA when set, else the best cpuid reports.
// Throws sb::Error naming SAMEBITS_ISA when it names a path this CPU or build lacks ("amx": no
// AMX-INT8 kernel is built).
std::string exact_gemm_isa();
// Whether SAMEBITS_ISA=name would run here (throws for a name that is no instruction set).
bool exact_gemm_isa_available(const std::string& name);

}  // namespace sb
