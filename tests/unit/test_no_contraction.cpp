// Fails if the compiler contracted a*b+c into an FMA in shared arithmetic: the SB_HD probes of
// samebits/det/fpenv.hpp, compiled here with the project's flags and in the library with its
// flags, must give the unfused answer (+0), while sb::det::fma_f32/fma_f64 give the fused one.
// nvcc's side is test_no_contraction_ptx (no_contraction_probe.cu, check_no_fma_ptx.cmake).
#include <doctest/doctest.h>

#include "samebits/det/bits.hpp"
#include "samebits/det/fpenv.hpp"
#include "samebits/det/hd.hpp"

using namespace sb::det;

namespace {

// Opaque inputs, each its own volatile: the compiler can neither fold the probes at compile time
// nor see that two products are equal and share them.
volatile float g_a = kProbeF32, g_b = kProbeF32, g_c = -kProbeF32, g_d = kProbeF32;
volatile double g_da = kProbeF64, g_db = kProbeF64, g_dc = -kProbeF64Product;

}  // namespace

TEST_CASE("the inputs separate fused from unfused results (checked in fp64)") {
  const double a = kProbeF32;
  CHECK(a * a == 1.0 + 0x1p-11 + 0x1p-24);              // exact in fp64
  CHECK(static_cast<float>(a * a) == 1.0f + 0x1p-11f);  // the fp32 product: a tie to even
  CHECK(static_cast<double>(kProbeF64Product) == 1.0 + 0x1p-26);
}

TEST_CASE("a*b + c*d in an SB_HD function compiled with the project's flags is not contracted") {
  CHECK(bits_of(contraction_probe_f32(g_a, g_b, g_c, g_d)) == bits_of(0.0f));
  CHECK(bits_of(contraction_probe_f64(g_da, g_db, g_dc)) == bits_of(0.0));
}

TEST_CASE("the determinism library was compiled without contraction") { CHECK_FALSE(library_contracts_mul_add()); }

TEST_CASE("fma_f32 and fma_f64 are fused: one rounding") {
  CHECK(bits_of(fma_f32(g_a, g_b, -(1.0f + 0x1p-11f))) == bits_of(0x1p-24f));
  CHECK(bits_of(fma_f32(g_c, g_d, 1.0f + 0x1p-11f)) == bits_of(-0x1p-24f));
  CHECK(bits_of(fma_f64(g_da, g_db, g_dc)) == bits_of(0x1p-54));
}
