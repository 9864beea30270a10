// Before any command runs: a vendor BLAS kernel set below this CPU's ISA (an OpenBLAS older than
// the CPU misnames it, blas_version.hpp) is replaced by the CPU's own. OPENBLAS_CORETYPE is read
// only when the library loads, so the process executes itself again, once, with it set (the
// same process id: mpirun and Slurm see nothing). SAMEBITS_BLAS_CORE: auto (default: a core set
// by the user's OPENBLAS_CORETYPE is kept), keep (never replace), force (replace even the user's).
// Only vendor numerics call BLAS: no deterministic bit depends on this.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "samebits/cli/command.hpp"
#include "samebits/core/cpu/blas_version.hpp"

namespace sb::cli {

void use_native_blas_core(char** argv) {
  const char* mode_env = std::getenv("SAMEBITS_BLAS_CORE");
  const std::string mode = mode_env != nullptr ? mode_env : "auto";
  if (mode == "keep" || std::getenv(kBlasCoreReplacedVar) != nullptr) return;
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (user != nullptr && *user != '\0' && mode != "force") return;
  const std::string loaded = blas_core(), cpu = blas_core_for_this_cpu();
  if (cpu.empty() || blas_core_level(loaded) >= blas_core_level(cpu)) return;
  ::setenv("OPENBLAS_CORETYPE", cpu.c_str(), 1);
  ::setenv(kBlasCoreReplacedVar, loaded.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  ::unsetenv(kBlasCoreReplacedVar);  // exec failed: go on with the library's choice
  if (user != nullptr) ::setenv("OPENBLAS_CORETYPE", user, 1);
  else ::unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace sb::cli
