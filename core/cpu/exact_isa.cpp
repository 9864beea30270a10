// Which path runs the exact GEMM: SAMEBITS_ISA=scalar|avx2|avx512|onednn|amx forces one (an error
// that names the variable when this CPU or build lacks it), else the fastest this CPU and build
// have. Every path computes the same exact integers, so the choice never changes a bit.
#include <cstdlib>
#include <string>
#include <vector>

#include "exact_gemm.hpp"
#include "samebits/core/cpu/exact_isa.hpp"
#include "samebits/det/error.hpp"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sb::cpu::exact {
namespace {

#if defined(SB_HAVE_ONEDNN)
constexpr bool kOneDnn = true;
#else
constexpr bool kOneDnn = false;
#endif

// Linux lets a process use AMX tile data only after it asks (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA, Linux ≥ 5.16); asked once per process, the answer kept.
bool amx_permitted() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = [] {
    constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

bool cpu_reports(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
    case Isa::onednn: return true;
    case Isa::amx: return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8");
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

// Why SAMEBITS_ISA=isa cannot run here, or nullptr when it can.
const char* missing(Isa isa) {
  if ((isa == Isa::onednn || isa == Isa::amx) && !kOneDnn) return "samebits was built without oneDNN (libdnnl-dev)";
  if (!cpu_reports(isa))
    return isa == Isa::amx ? "this CPU does not report AMX-INT8 in cpuid" : "this CPU does not report it in cpuid";
  if (isa == Isa::amx && !amx_permitted())
    return "Linux refused AMX tile data to this process (arch_prctl ARCH_REQ_XCOMP_PERM)";
  return nullptr;
}

Isa parse_isa(const std::string& name) {
  if (name == "scalar") return Isa::scalar;
  if (name == "avx2") return Isa::avx2;
  if (name == "avx512") return Isa::avx512;
  if (name == "onednn") return Isa::onednn;
  if (name == "amx") return Isa::amx;
  SB_FAIL("SAMEBITS_ISA='", name, "' is not a path of the exact GEMM; use scalar, avx2, avx512, onednn or amx");
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::onednn: return "onednn";
    case Isa::amx: return "amx";
  }
  return "?";
}

}  // namespace

Isa active_isa() {
  if (const char* forced = std::getenv("SAMEBITS_ISA"); forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced);
    const char* why = missing(isa);
    SB_CHECK(why == nullptr, "SAMEBITS_ISA=", forced, " but ", why,
             "; use a path this machine has or unset SAMEBITS_ISA");
    return isa;
  }
  for (Isa isa : {Isa::amx, Isa::avx512, Isa::avx2})
    if (missing(isa) == nullptr) return isa;
  return Isa::scalar;
}

Isa own_isa(Isa isa) {
  if (isa != Isa::onednn && isa != Isa::amx) return isa;
  return missing(Isa::avx512) == nullptr ? Isa::avx512 : missing(Isa::avx2) == nullptr ? Isa::avx2 : Isa::scalar;
}

Kernel kernel(Isa isa) {
  isa = own_isa(isa);
#if defined(__x86_64__)
  if (isa == Isa::avx512) return kernel_avx512;
  if (isa == Isa::avx2) return kernel_avx2;
#endif
  return kernel_scalar;
}

}  // namespace sb::cpu::exact

namespace sb {

std::string exact_gemm_isa() { return cpu::exact::isa_name(cpu::exact::active_isa()); }

std::vector<std::string> exact_gemm_isa_names() { return {"scalar", "avx2", "avx512", "onednn", "amx"}; }

bool exact_gemm_isa_available(const std::string& name) {
  return cpu::exact::missing(cpu::exact::parse_isa(name)) == nullptr;
}

}  // namespace sb
