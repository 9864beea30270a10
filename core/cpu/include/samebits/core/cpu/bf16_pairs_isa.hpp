// The path that runs the bf16 pair order (numerics.bf16_dot = pairs) on this CPU, and the check
// that decides whether vdpbf16ps may run it: what selftest, the run file, benchmarks and tests name.
// Every path computes ops::bf16_pair_dot's bits (core/cpu/bf16_pairs.hpp).
#pragma once
#include <string>
#include <vector>

namespace sb {

// "scalar", "avx2", "avx512" (emulations) or "avx512bf16" (vdpbf16ps): SAMEBITS_BF16_ISA when set,
// else vdpbf16ps where cpuid reports AVX512-BF16 and bf16_instruction_check() agrees, else the
// widest emulation. Throws sb::Error naming SAMEBITS_BF16_ISA when it names a path this CPU lacks.
std::string bf16_pairs_isa();
std::vector<std::string> bf16_pairs_isa_names();
// Whether SAMEBITS_BF16_ISA=name would run here (throws for a name that is no path).
bool bf16_pairs_isa_available(const std::string& name);

// vdpbf16ps against the emulation (ops::bf16_pair_fma) on adversarial pairs, once per process.
struct Bf16InstructionCheck {
  bool ran = false;    // the CPU reports AVX512-BF16
  bool agree = false;  // every result bitwise equal (NaNs: both NaN)
  std::string detail;  // what was compared, and the first disagreement
};
const Bf16InstructionCheck& bf16_instruction_check();

}  // namespace sb
