// Which kernel runs the exact GEMM: SAMEBITS_ISA=scalar|avx2|avx512|amx forces one (an error that
// names the variable when this CPU or build lacks it), else the best the CPU reports in cpuid.
// Every kernel computes the same exact integers, so the choice never changes a bit.
#include <cstdlib>
#include <string>

#include "exact_gemm.hpp"
#include "samebits/core/cpu/exact_isa.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::exact {
namespace {

bool cpu_has(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
    case Isa::amx: return false;  // no AMX-INT8 kernel is built (docs/CONTRACT.md, the exact GEMM)
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

Isa parse_isa(const std::string& name) {
  if (name == "scalar") return Isa::scalar;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  if (name == "amx") return Isa::amx;
  SB_FAIL("SAMEBITS_ISA='", name, "' is not an instruction set of the exact GEMM; use scalar, avx2, avx512 or amx");
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::amx: return "amx";
  }
  return "?";
}

}  // namespace

Isa active_isa() {
  if (const char* forced = std::getenv("SAMEBITS_ISA"); forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced);
    SB_CHECK(
        cpu_has(isa), "SAMEBITS_ISA=", forced, " but ",
        isa == Isa::amx ? "samebits has no AMX-INT8 kernel for the exact GEMM" : "this CPU does not report it in cpuid",
        "; use one this machine has or unset SAMEBITS_ISA");
    return isa;
  }
  if (cpu_has(Isa::avx512)) return Isa::avx512;
  if (cpu_has(Isa::avx2)) return Isa::avx2;
  return Isa::scalar;
}

Kernel kernel(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512) return kernel_avx512;
  if (isa == Isa::avx2) return kernel_avx2;
#endif
  return kernel_scalar;
}

}  // namespace sb::cpu::exact

namespace sb {

std::string exact_gemm_isa() { return cpu::exact::isa_name(cpu::exact::active_isa()); }

bool exact_gemm_isa_available(const std::string& name) {
  const cpu::exact::Isa isa = cpu::exact::parse_isa(name);
  return cpu::exact::cpu_has(isa);
}

}  // namespace sb
