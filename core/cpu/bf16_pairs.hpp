// The bf16 pair order on the CPU (numerics.bf16_dot = pairs; the definition: ops/bf16_pairs.hpp and
// docs/CONTRACT.md). Internal to core/cpu: the packed pair layout every kernel reads, the kernels
// per instruction set (vdpbf16ps itself, or its emulation from fp32 fma), the driver. Each kernel
// computes every C element's pair chain exactly as ops::bf16_pair_dot, so every path, tile order
// and thread count gives the same bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "samebits/core/ops/bf16_pairs.hpp"
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

// Packing: `lanes` lanes (rows of op(A) or columns of op(B)) as ⌈lanes / w⌉ panels of w lanes (MR
// or NR), each kp = ⌈k/2⌉ pairs of w words: lane q·w + l's pair pp at out[(q·kp + pp)·w + l] (the
// layout above); the last panel's lanes past `lanes` are 0. Lane l's element p lies at x[p·ld + l]
// (across: a pair's lanes contiguous, op(A) stored transposed or op(B) not) or at x[l·ld + p]
// (along: each lane's line contiguous in k). Pure conversion, ops::bf16_pair_operand element by
// element: every packer gives the same words.
struct Lines {
  const float* x;
  size_t ld;
  bool along;
  int lanes, k;
  uint16_t pad;  // the odd slot of an odd k's last pair
  int panels(int w) const { return (lanes + w - 1) / w; }
  // Where lane l's pair pp goes.
  size_t at(int w, int l, int pp) const { return (static_cast<size_t>(l / w) * ((k + 1) / 2) + pp) * w + l % w; }
};
using Pack = void (*)(const Lines& src, int w, uint32_t* out);
// Pair pp of a lane whose element p lies at x[p·step]: the element 2pp's operand low, 2pp + 1's
// (or the pad) high.
inline uint32_t pair_word(const float* x, size_t step, int pp, int k, uint16_t pad) {
  const size_t p = 2 * static_cast<size_t>(pp);
  const uint16_t odd = p + 1 < static_cast<size_t>(k) ? ops::bf16_pair_operand(x[(p + 1) * step]) : pad;
  return uint32_t{odd} << 16 | ops::bf16_pair_operand(x[p * step]);
}
void pack_scalar(const Lines& src, int w, uint32_t* out);
void pack_avx2(const Lines& src, int w, uint32_t* out);
void pack_avx512(const Lines& src, int w, uint32_t* out);

// The path: scalar (ops:: formula), avx2 / avx512 (the emulation in 8 / 16 fp32 lanes) or
// avx512bf16 (vdpbf16ps). SAMEBITS_BF16_ISA when set (an error naming the variable when this CPU
// lacks it or, for avx512bf16, when the instruction disagrees with the emulation), else
// avx512bf16 where cpuid reports it and bf16_instruction_check() agrees (bf16_pairs_isa.hpp), else
// the widest emulation.
enum class Isa : uint8_t { scalar, avx2, avx512, avx512bf16 };
Isa active_isa();
Kernel kernel(Isa isa);
Pack packer(Isa isa);

// C ← [C +] op(A)·op(B) [+ bias] in the pair order (g.precision bf16), on its own OpenMP team.
void gemm_pairs(const ops::GemmProblem& g);

}  // namespace sb::cpu::pairs
