// The numerics mode of an experiment (docs/CONTRACT.md): each source of nondeterminism is its own
// switch. Canonical settings follow its rules; vendor/native ones behave like ordinary
// frameworks and exist to be measured against.
#pragma once
#include <string>
#include <string_view>

#include "samebits/core/enum_names.hpp"

namespace sb {

// gemm=canonical: rule 1 (one ascending-k fma chain per output from +0, no split-K).
// gemm=vendor: OpenBLAS sgemm on the CPU, cuBLAS on the GPU.
// gemm=exact: integer slices summed exactly, rounded once (ops/exact_gemm.hpp): int8 kernels on the
// CPU, int8 tensor cores on CUDA; tensor parallelism under it on the CPU only.
enum class GemmMode { canonical, vendor, exact };

// reduce=canonical: rules 2, 3, 5 (32-lane rows, token-ascending chains, exact scalars).
// reduce=native: plain float loops and OpenMP reduction partials in thread order (CUDA: float
// atomics too).
enum class ReduceMode { canonical, native };

// The precision of GEMM operands: bf16/fp16 round both operands to that format (RNE) on load and
// accumulate in fp32. Master weights, activations and every other op stay fp32.
enum class Precision { fp32, bf16, fp16 };

// The order of a bf16 GEMM's dot product (precision bf16, gemm canonical; docs/CONTRACT.md):
// chain: rule 1, one fma per k. pairs: the order of AVX512-BF16's vdpbf16ps — k in pairs, the odd
// product then the even one fused into the fp32 accumulator, bf16 subnormals read as zero, fp32
// subnormal results flushed to zero (ops/bf16_pairs.hpp).
enum class Bf16Dot { chain, pairs };

struct Numerics {
  GemmMode gemm = GemmMode::canonical;
  ReduceMode reduce = ReduceMode::canonical;
  Precision precision = Precision::fp32;
  Bf16Dot bf16_dot = Bf16Dot::chain;

  // Every switch canonical: the contract's bits (the default).
  static Numerics deterministic(Precision p = Precision::fp32) {
    return {GemmMode::canonical, ReduceMode::canonical, p};
  }
  // Every switch vendor/native.
  static Numerics vendor(Precision p = Precision::fp32) { return {GemmMode::vendor, ReduceMode::native, p}; }
  bool operator==(const Numerics&) const = default;
};

// The spellings of config and run files ([numerics] gemm, reduce; [train] precision).
template <>
struct EnumNames<GemmMode> {
  static constexpr std::array<std::string_view, 3> names{"canonical", "vendor", "exact"};
};
template <>
struct EnumNames<ReduceMode> {
  static constexpr std::array<std::string_view, 2> names{"canonical", "native"};
};
template <>
struct EnumNames<Precision> {
  static constexpr std::array<std::string_view, 3> names{"fp32", "bf16", "fp16"};
};

template <>
struct EnumNames<Bf16Dot> {
  static constexpr std::array<std::string_view, 2> names{"chain", "pairs"};
};

// config_name under the name the kernels' messages use.
std::string_view to_string(GemmMode m);    // "canonical" | "vendor" | "exact"
std::string_view to_string(ReduceMode m);  // "canonical" | "native"
std::string_view to_string(Precision p);   // "fp32" | "bf16" | "fp16"
std::string_view to_string(Bf16Dot d);     // "chain" | "pairs"
// "gemm=canonical reduce=canonical precision=fp32" (then " bf16_dot=pairs" under pairs)
std::string describe(const Numerics& n);

}  // namespace sb
