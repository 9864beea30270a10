// Which path runs the bf16 pair order: SAMEBITS_BF16_ISA=scalar|avx2|avx512|avx512bf16 forces one
// (an error naming the variable when this CPU lacks it), else vdpbf16ps where the instruction check
// agrees, else the widest emulation. The check runs the instruction and the definition
// (ops::bf16_pair_fma) on adversarial single pairs lane by lane and on random chains through the
// kernels, and trusts the instruction only when every result is bitwise the same.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bf16_pairs.hpp"
#include "gemm_simd.hpp"
#include "samebits/core/cpu/bf16_pairs_isa.hpp"
#include "samebits/core/ops/bf16_pairs.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::pairs {
namespace {

bool cpu_reports(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512: return __builtin_cpu_supports("avx512f");
    case Isa::avx512bf16: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

constexpr const char* kNames[] = {"scalar", "avx2", "avx512", "avx512bf16"};

Isa parse_isa(const std::string& name) {
  for (int i = 0; i < 4; ++i)
    if (name == kNames[i]) return static_cast<Isa>(i);
  SB_FAIL("SAMEBITS_BF16_ISA='", name,
          "' is not a path of the bf16 pair order; use scalar, avx2, avx512 or avx512bf16");
}

#if defined(__x86_64__)
// out[l] ← one vdpbf16ps on lane l: acc[l] + the odd then the even product of pairs a[l], b[l].
__attribute__((target("avx512f,avx512bf16"))) void instruction_lanes(const float* acc, const uint32_t* a,
                                                                     const uint32_t* b, float* out) {
  _mm512_storeu_ps(
      out, _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a), (__m512bh)_mm512_loadu_si512(b)));
}
#endif

std::string hex(uint32_t u) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08x", u);
  return buf;
}
bool same(float x, float y) { return det::bits_of(x) == det::bits_of(y) || (x != x && y != y); }

uint32_t pair(float odd, float even) {
  return (uint32_t{ops::bf16_pair_operand(odd)} << 16) | ops::bf16_pair_operand(even);
}

// SplitMix64 (Steele, Lea & Flood 2014): bf16 values with exponents near 1, near 2^-126 (the flush)
// and anywhere, subnormals and zeros included.
struct Draw {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint16_t bf16() {
    const uint64_t r = next();
    const uint32_t kind = r % 8, mant = (r >> 8) & 0x7f, sign = (r >> 16) & 1;
    uint32_t e = (r >> 24) % 255;
    if (kind < 3) e = 127 - 8 + (r >> 24) % 16;  // near 1: ties and cancellation in the chains
    if (kind == 3) e = 60 + (r >> 24) % 8;       // products near 2^-126
    if (kind == 4) e = 0;                        // ±0 and subnormals (read as zero)
    return static_cast<uint16_t>(sign << 15 | e << 7 | mant);
  }
};

// Single pairs whose results decide the definition: the flush boundary (an exact value in
// [2^-126 − 2^-150, 2^-126)), ties to even, cancellation to ±0, subnormal inputs, signed zeros, the
// odd k's pads, infinities. {acc, a_odd, b_odd, a_even, b_even}.
struct Case {
  float acc, a_odd, b_odd, a_even, b_even;
};
std::vector<Case> edge_cases() {
  const float m = 0x1p-126f, t = 0x1p-76f;
  std::vector<Case> c;
  for (const float s : {1.0f, -1.0f}) {
    for (int e = 149; e <= 153; ++e) c.push_back({s * m, t, -s * std::ldexp(1.0f, 76 - e), 0.0f, 0.0f});
    c.push_back({s * m, t, -s * 0x1p-75f, -0.0f, 0.0f});                             // 2^-126 − 2^-151, even pad −0
    c.push_back({s * 1.0f, 0x1p-12f, s * 0x1p-12f, 0.0f, 0.0f});                     // 1 + 2^-24: tie, stays 1
    c.push_back({s * (1.0f + 0x1p-23f), 0x1p-12f, s * 0x1p-12f, 0, 0});              // tie up to even
    c.push_back({s * 3.0f, 1.5f, -s * 2.0f, det::float_of_bits(0x00010000), 1.0f});  // cancellation, subnormal a
    c.push_back({s * 0.0f, -0.0f, 0.0f, 0.0f, -0.0f});                               // signed zeros
    c.push_back({s * 0.0f, det::float_of_bits(0x807f0000), 1.0f, 1.0f, det::float_of_bits(0x00010000)});
    c.push_back({s * 1e30f, 0x1p100f, s * 0x1p100f, 1.0f, 1.0f});  // overflow to ±Inf
    c.push_back({s * INFINITY, 1.0f, -s * INFINITY, 0.0f, 1.0f});  // Inf − Inf
    c.push_back({s * 0x1p-100f, 0x1p-13f, 0x1p-113f, -0x1p-50f, s * 0x1p-76f});
  }
  return c;
}

Bf16InstructionCheck run_check() {
  Bf16InstructionCheck out;
  if (!cpu_reports(Isa::avx512bf16)) {
    out.detail = "this CPU does not report AVX512-BF16: the pair order runs on its emulation";
    return out;
  }
#if defined(__x86_64__)
  out.ran = true;
  // 1. Single pairs, lane by lane: the edge cases, then random ones (random starts, flushed).
  std::vector<Case> cases = edge_cases();
  Draw draw{0x5eedb16f};
  while (cases.size() % 16 != 0 || cases.size() < 4096) {
    const uint32_t acc_bits = static_cast<uint32_t>(draw.next());
    const float acc = ops::bf16_pair_flush(draw.next() % 2 ? det::float_of_bits(acc_bits)
                                                           : det::float_of_bits(acc_bits & 0x80ffffffu));
    auto v = [&] { return det::f32_from_bf16_bits(draw.bf16()); };
    const float ao = v(), bo = v(), ae = v(), be = v();
    cases.push_back({acc, ao, bo, ae, be});
  }
  size_t compared = 0;
  for (size_t i0 = 0; i0 < cases.size(); i0 += 16) {
    float acc[16], got[16];
    uint32_t a[16], b[16];
    for (int l = 0; l < 16; ++l) {
      const Case& c = cases[i0 + l];
      acc[l] = ops::bf16_pair_flush(c.acc);
      a[l] = pair(c.a_odd, c.a_even);
      b[l] = pair(c.b_odd, c.b_even);
    }
    instruction_lanes(acc, a, b, got);
    for (int l = 0; l < 16; ++l, ++compared) {
      const float want =
          ops::bf16_pair_fma(acc[l], static_cast<uint16_t>(a[l] >> 16), static_cast<uint16_t>(b[l] >> 16),
                             static_cast<uint16_t>(a[l]), static_cast<uint16_t>(b[l]));
      if (!same(got[l], want)) {
        out.detail = detail::concat("vdpbf16ps differs from the emulation: acc ", hex(det::bits_of(acc[l])), " a ",
                                    hex(a[l]), " b ", hex(b[l]), " gives ", hex(det::bits_of(got[l])),
                                    ", the definition ", hex(det::bits_of(want)));
        return out;
      }
    }
  }
  // 2. Chains through the kernels: random 8 × 32 tiles over 64 pairs, native against scalar.
  constexpr int kp = 64;
  std::vector<uint32_t> pa(kp * MR), pb(kp * NR);
  size_t chains = 0;
  for (int trial = 0; trial < 8; ++trial) {
    for (auto& x : pa) x = static_cast<uint32_t>(draw.bf16()) << 16 | draw.bf16();
    for (auto& x : pb) x = static_cast<uint32_t>(draw.bf16()) << 16 | draw.bf16();
    for (auto& x : pa) x = pair(det::float_of_bits(x & 0xffff0000u), det::float_of_bits(x << 16));
    for (auto& x : pb) x = pair(det::float_of_bits(x & 0xffff0000u), det::float_of_bits(x << 16));
    float native[MR * NR] = {}, defined[MR * NR] = {};
    kernel_avx512bf16(kp, pa.data(), pb.data(), native);
    kernel_scalar(kp, pa.data(), pb.data(), defined);
    for (int e = 0; e < MR * NR; ++e, ++chains) {
      if (!same(native[e], defined[e])) {
        out.detail = detail::concat("vdpbf16ps chains differ from the emulation at tile element ", e, " of trial ",
                                    trial, ": ", hex(det::bits_of(native[e])), " vs ", hex(det::bits_of(defined[e])));
        return out;
      }
    }
  }
  out.agree = true;
  out.detail = detail::concat("vdpbf16ps equals the emulation on ", compared, " single pairs (", edge_cases().size(),
                              " edge cases: the flush boundary, ties, cancellation, subnormal inputs, signed zeros, "
                              "Inf) and ",
                              chains, " chains of ", 2 * kp, " products: the pair order runs on it");
#endif
  return out;
}

// Why SAMEBITS_BF16_ISA=isa cannot run here, or nullptr when it can.
const char* missing(Isa isa) {
  if (!cpu_reports(isa)) return "this CPU does not report it in cpuid";
  if (isa == Isa::avx512bf16 && !bf16_instruction_check().agree)
    return "vdpbf16ps disagrees with the emulation here (samebits selftest says where)";
  return nullptr;
}

}  // namespace

Isa active_isa() {
  if (const char* forced = std::getenv("SAMEBITS_BF16_ISA"); forced != nullptr && *forced != '\0') {
    const Isa isa = parse_isa(forced);
    const char* why = missing(isa);
    SB_CHECK(why == nullptr, "SAMEBITS_BF16_ISA=", forced, " but ", why,
             "; use a path this machine has or unset SAMEBITS_BF16_ISA");
    return isa;
  }
  for (Isa isa : {Isa::avx512bf16, Isa::avx512, Isa::avx2})
    if (missing(isa) == nullptr) return isa;
  return Isa::scalar;
}

Kernel kernel(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512bf16) return kernel_avx512bf16;
  if (isa == Isa::avx512) return kernel_avx512;
  if (isa == Isa::avx2) return kernel_avx2;
#endif
  return kernel_scalar;
}

Pack packer(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::avx512bf16 || isa == Isa::avx512) return pack_avx512;
  if (isa == Isa::avx2) return pack_avx2;
#endif
  return pack_scalar;
}

}  // namespace sb::cpu::pairs

namespace sb {

std::string bf16_pairs_isa() { return cpu::pairs::kNames[static_cast<int>(cpu::pairs::active_isa())]; }

std::vector<std::string> bf16_pairs_isa_names() { return {"scalar", "avx2", "avx512", "avx512bf16"}; }

bool bf16_pairs_isa_available(const std::string& name) {
  return cpu::pairs::missing(cpu::pairs::parse_isa(name)) == nullptr;
}

const Bf16InstructionCheck& bf16_instruction_check() {
  static const Bf16InstructionCheck check = cpu::pairs::run_check();
  return check;
}

}  // namespace sb
