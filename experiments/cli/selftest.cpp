// samebits selftest: run every determinism primitive's invariance check and print a summary.
#include <cstdio>

#include "samebits/cli/command.hpp"
#include "samebits/core/cpu/bf16_pairs_isa.hpp"
#include "samebits/core/cpu/blas_version.hpp"
#include "samebits/det/selftest.hpp"

namespace sb::cli {
namespace {

int run_selftest(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::puts(
        "usage: samebits selftest\n\nRuns the determinism primitives' invariance checks "
        "(fp environment, fp formats, math, Philox, exact sums, fixed-point accumulator, "
        "32-lane reduction, fingerprints) and prints one line each; then vdpbf16ps against the emulation of\n"
        "the bf16 pair order (numerics.bf16_dot = pairs) on adversarial inputs, and the path that order runs\n"
        "on here (the instruction only where they agree); then the vendor BLAS kernel the vendor GEMM runs\n"
        "(OpenBLAS's core, and who chose it). Exit 0 when all pass.");
    return args[0] == "--help" ? kExitOk : kExitError;
  }
  int failed = 0;
  for (const auto& r : det::run_selftests()) {
    std::printf("%-18s %s  %s\n", r.name.c_str(), r.ok ? "ok  " : "FAIL", r.detail.c_str());
    failed += r.ok ? 0 : 1;
  }
  // The instruction is trusted only where it agrees; where it does not, the emulation runs the pair
  // order (the same bits), so a disagreement is reported, not failed.
  const Bf16InstructionCheck& bf16 = bf16_instruction_check();
  std::printf("%-18s %s  %s; runs on %s\n", "bf16 pairs", bf16.ran && !bf16.agree ? "info" : "ok  ",
              bf16.detail.c_str(), bf16_pairs_isa().c_str());
  // Not a check: the kernel the vendor GEMM (numerics.gemm = vendor) runs on this machine.
  std::printf("%-18s %s  %s\n", "vendor BLAS", "info", blas_core_text().c_str());
  std::printf("selftest: %d failed\n", failed);
  return failed == 0 ? kExitOk : kExitError;
}

const Registrar kSelftest{{"selftest", "check the determinism primitives on this machine", run_selftest}};

}  // namespace
}  // namespace sb::cli
