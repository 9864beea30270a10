// The floating-point environment guard (docs/CONTRACT.md rule 8): the contract needs subnormals
// kept (no FTZ, no DAZ), rounding to nearest-even, and a*b+c never contracted into an FMA outside
// the explicit sb::det::fma_f32. check_fp_environment() is called at program start.
#pragma once
#include <string>

#include "samebits/det/hd.hpp"

namespace sb::det {

// Throws sb::Error naming what is wrong (FTZ or DAZ on, rounding not to nearest, or this build
// contracting a*b+c) and what to do.
void check_fp_environment();

// One line for run files and messages, e.g. "MXCSR=0x1f80 FTZ=off DAZ=off round=nearest".
std::string fp_environment_description();

// Contraction probes: shared arithmetic exactly as formulas write it. With the inputs below, the
// unfused answer (two roundings) is +0 and any contraction into an FMA gives ±2^-24 (fp32) or
// ±2^-54 (fp64); see kProbe*. The library's own compiled copy is library_contracts_mul_add().
SB_HD float contraction_probe_f32(float a, float b, float c, float d) { return a * b + c * d; }
SB_HD double contraction_probe_f64(double a, double b, double c) { return a * b + c; }

// Inputs: a = b = 1 + 2^-12 (a·b = 1 + 2^-11 + 2^-24, a tie that rounds to 1 + 2^-11), c = -a,
// d = b; for fp64 a = b = 1 + 2^-27 and c = -(1 + 2^-26).
inline constexpr float kProbeF32 = 1.0f + 0x1p-12f;
inline constexpr double kProbeF64 = 1.0 + 0x1p-27;
inline constexpr double kProbeF64Product = 1.0 + 0x1p-26;

// True when the determinism library itself was compiled with a*b+c contracted into an FMA.
bool library_contracts_mul_add();

}  // namespace sb::det
