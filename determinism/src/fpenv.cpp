// The floating-point environment guard: reads the SSE control register (MXCSR) on x86, the FPCR on
// AArch64, and the C rounding mode, and refuses to run when they break the numerical contract.
// Also the library's own contraction probe, compiled with the library's flags.
#include "samebits/det/fpenv.hpp"

#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <string>

#include "samebits/det/error.hpp"
#include "samebits/det/selftest.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace sb::det {
namespace {

const char* rounding_name(int mode) {
  switch (mode) {
    case FE_TONEAREST: return "nearest";
    case FE_UPWARD: return "upward";
    case FE_DOWNWARD: return "downward";
    case FE_TOWARDZERO: return "toward-zero";
    default: return "unknown";
  }
}

struct FpEnvironment {
  std::string control;    // the control register as text, e.g. "MXCSR=0x1f80"
  bool ftz = false;       // results below the normal range flushed to zero
  bool daz = false;       // subnormal inputs read as zero
  int simd_rounding = 0;  // the rounding of scalar/vector float arithmetic (FE_* value)
  int c_rounding = 0;     // fegetround() (on x86: the x87 unit)
};

FpEnvironment read_environment() {
  FpEnvironment env;
  env.c_rounding = std::fegetround();
  char text[32];
#if defined(__x86_64__) || defined(__i386__)
  const uint32_t csr = _mm_getcsr();
  std::snprintf(text, sizeof text, "MXCSR=0x%04x", csr);
  env.ftz = (csr & 0x8000u) != 0;
  env.daz = (csr & 0x0040u) != 0;
  static const int kModes[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
  env.simd_rounding = kModes[(csr >> 13) & 3u];
#elif defined(__aarch64__)
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  std::snprintf(text, sizeof text, "FPCR=0x%08llx", static_cast<unsigned long long>(fpcr));
  env.ftz = (fpcr & (1u << 24)) != 0;  // FZ flushes both inputs and outputs
  env.daz = env.ftz;
  static const int kModes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  env.simd_rounding = kModes[(fpcr >> 22) & 3u];
#else
#error "samebits: reading the floating-point control register is implemented for x86 and AArch64"
#endif
  env.control = text;
  return env;
}

std::string describe(const FpEnvironment& env) {
  std::string s = env.control + " FTZ=" + (env.ftz ? "on" : "off") + " DAZ=" + (env.daz ? "on" : "off") +
                  " round=" + rounding_name(env.simd_rounding);
  if (env.c_rounding != env.simd_rounding) {
    s += std::string(" (fegetround: ") + rounding_name(env.c_rounding) + ")";
  }
  return s;
}

}  // namespace

bool library_contracts_mul_add() {
  // Each input read separately from volatile memory: the compiler can neither fold the probe nor
  // see that two products are the same and share them.
  volatile float fa = kProbeF32, fb = kProbeF32, fc = -kProbeF32, fd = kProbeF32;
  volatile double da = kProbeF64, db = kProbeF64, dc = -kProbeF64Product;
  return contraction_probe_f32(fa, fb, fc, fd) != 0.0f || contraction_probe_f64(da, db, dc) != 0.0;
}

std::string fp_environment_description() { return describe(read_environment()); }

void check_fp_environment() {
  const FpEnvironment env = read_environment();
  const bool ok = !env.ftz && !env.daz && env.simd_rounding == FE_TONEAREST && env.c_rounding == FE_TONEAREST;
  SB_CHECK(ok,
           "floating-point environment breaks the numerical contract: expected FTZ=off "
           "DAZ=off round=nearest, seen ",
           describe(env),
           ". Something in this process "
           "changed it (a library built with -ffast-math or -Ofast sets FTZ/DAZ when it is "
           "loaded; or a call to _mm_setcsr or fesetround): rebuild or drop it, since samebits "
           "cannot give reproducible bits in this environment.");
  SB_CHECK(!library_contracts_mul_add(),
           "this samebits build contracts a*b+c into fused multiply-adds (expected two roundings, "
           "seen one): it was compiled without -ffp-contract=off. Build with the flags of "
           "cmake/Numerics.cmake (no fast-math, no -ffp-contract=fast).");
}

SelftestResult selftest_fp_env() {
  check_fp_environment();
  return {"fp_env", true, fp_environment_description() + ", a*b+c not contracted"};
}

}  // namespace sb::det
