// SB_HD marks a function as callable from host and device: one source for every formula
// (docs/CONTRACT.md rule 7). Under nvcc it is __host__ __device__; elsewhere plain inline.
#pragma once
#include <math.h>

#if defined(__CUDACC__)
#define SB_HD __host__ __device__ inline
#else
#define SB_HD inline
#endif

namespace sb::det {

// The fused multiply-add of the contract (a·b + c, one rounding). Host: the FMA instruction when
// the build has it, else libm's exact software fma; device: the FFMA instruction.
SB_HD float fma_f32(float a, float b, float c) { return fmaf(a, b, c); }
SB_HD double fma_f64(double a, double b, double c) { return fma(a, b, c); }

// IEEE square root (correctly rounded on both sides: nvcc --prec-sqrt=true).
SB_HD float sqrt_f32(float x) { return sqrtf(x); }

}  // namespace sb::det
