// The bf16 pair order on the CPU (numerics.bf16_dot = pairs; the definition: ops/bf16_pairs.hpp and
// docs/CONTRACT.md). Internal to core/cpu: the packed pair layout every kernel reads, the kernels
// per instruction set (vdpbf16ps itself, or its emulation from fp32 fma), the driver. Each kernel
// computes every C element's pair chain exactly as ops::bf16_pair_dot, so every path, tile order
// and thread count gives the same bits.
#pragma once
#include <cstdint>
#include <string>

#include "samebits/core/ops/gemm_problem.hpp"

namespace sb::cpu::pairs {

// The tile of every kernel: MR rows of C × NR columns; k packed in pairs, one uint32 per pair: the
// even element's bf16 bits in the low half, the odd one's in the high half (vdpbf16ps' lane), both
// read by ops::bf16_pair_operand; an odd k's last pair holds the pads (ops::kBf16PadA, kBf16PadB).
constexpr int MR = 8, NR = 32;

// tile (MR, NR) ← its pair chains continued over kp more pairs. The tile holds +0 or values that
// are never subnormal (the driver starts a continued product from ops::bf16_pair_flush(C), and no
// step leaves a subnormal). a: (kp, MR) pairs of MR rows; b: (kp, NR) pairs of NR columns.
using Kernel = void (*)(int kp, const uint32_t* a, const uint32_t* b, float* tile);
void kernel_scalar(int kp, const uint32_t* a, const uint32_t* b, float* tile);
void kernel_avx2(int kp, const uint32_t* a, const uint32_t* b, float* tile);
void kernel_avx512(int kp, const uint32_t* a, const uint32_t* b, float* tile);
void kernel_avx512bf16(int kp, const uint32_t* a, const uint32_t* b, float* tile);

// The path: scalar (ops:: formula), avx2 / avx512 (the emulation in 8 / 16 fp32 lanes) or
// avx512bf16 (vdpbf16ps). SAMEBITS_BF16_ISA when set (an error naming the variable when this CPU
// lacks it or, for avx512bf16, when the instruction disagrees with the emulation), else
// avx512bf16 where cpuid reports it and bf16_instruction_check() agrees (bf16_pairs_isa.hpp), else
// the widest emulation.
enum class Isa : uint8_t { scalar, avx2, avx512, avx512bf16 };
Isa active_isa();
Kernel kernel(Isa isa);

// C ← [C +] op(A)·op(B) [+ bias] in the pair order (g.precision bf16), on its own OpenMP team.
void gemm_pairs(const ops::GemmProblem& g);

}  // namespace sb::cpu::pairs
