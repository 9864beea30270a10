// blas_version.hpp: OpenBLAS's description, its kernel set, and this CPU's by cpuid.
#include "samebits/core/cpu/blas_version.hpp"

#include <cblas.h>

#include <cstdlib>

namespace sb {

std::string blas_version() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "unknown";
}

std::string blas_core() {
  const char* core = openblas_get_corename();
  return core != nullptr ? core : "unknown";
}

std::string blas_core_for_this_cpu() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return "";
}

int blas_core_level(const std::string& core) {
  for (const char* c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == c) return 3;
  for (const char* c : {"Haswell", "Zen", "Excavator", "Steamroller"})
    if (core == c) return 2;
  for (const char* c : {"Sandybridge", "Bulldozer", "Piledriver"})
    if (core == c) return 1;
  return 0;
}

std::string blas_core_text() {
  const std::string core = blas_core(), cpu = blas_core_for_this_cpu();
  if (const char* replaced = std::getenv(kBlasCoreReplacedVar); replaced != nullptr && *replaced != '\0')
    return core + " (set by samebits: OpenBLAS named this CPU " + replaced + ")";
  const bool below = !cpu.empty() && blas_core_level(core) < blas_core_level(cpu);
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set != nullptr && *set != '\0')
    return core + " (OPENBLAS_CORETYPE" + (below ? "; this CPU's is " + cpu : std::string()) + ")";
  return core + (below ? " (OpenBLAS's choice, below this CPU's " + cpu + ")" : " (OpenBLAS's choice for this CPU)");
}

}  // namespace sb
