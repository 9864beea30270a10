// Device side of the contraction check (test_no_contraction_ptx, tests/unit/extra.cmake): the
// shared contraction probes compiled by nvcc with the project's flags. Their PTX must hold no
// fused multiply-add, while the explicit sb::det::fma_f32/fma_f64 must compile to fma.rn.
#include "samebits/det/fpenv.hpp"
#include "samebits/det/hd.hpp"

// in: (4) floats, (3) doubles; out: (1) float, (1) double.
extern "C" __global__ void sb_probe_unfused(const float* a, const double* d, float* out_f, double* out_d) {
  out_f[0] = sb::det::contraction_probe_f32(a[0], a[1], a[2], a[3]);
  out_d[0] = sb::det::contraction_probe_f64(d[0], d[1], d[2]);
}

extern "C" __global__ void sb_probe_fused(const float* a, const double* d, float* out_f, double* out_d) {
  out_f[0] = sb::det::fma_f32(a[0], a[1], a[2]);
  out_d[0] = sb::det::fma_f64(d[0], d[1], d[2]);
}
