// The CPU GELU's vectorised loops (core/cpu/gelu.cpp: samebits tanh inlined, both branches computed
// per SIMD lane) against the scalar formula of ops/gelu.hpp called one element at a time: bitwise,
// on every 1009th fp32 bit pattern (both signs, subnormals, ±Inf, NaNs), a dense sweep of [-12, 12]
// and lengths that end mid-vector and mid-chunk, on 1 and 2 threads. NaN inputs must give NaN
// outputs; their payloads are not compared (see same_bits_or_nan).
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/gelu.hpp"
#include "samebits/det/bits.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

// The scalar formulas through volatile pointers, so the reference loop is never vectorised.
float (*volatile scalar_forward)(float) = ops::gelu_forward;
float (*volatile scalar_backward)(float, float) = ops::gelu_backward;

// Bitwise equal, except that a NaN may carry another payload: which operand's payload an x86
// instruction propagates depends on the operand order the compiler picked (and GPUs return one
// canonical NaN), so NaN payloads are not part of the contract. Every NaN must stay a NaN.
bool same_bits_or_nan(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (det::bits_of(a[i]) != det::bits_of(b[i])) {
      MESSAGE(what, ": first difference at element ", i, ": bits ", det::bits_of(a[i]), " vs ", det::bits_of(b[i]));
      return false;
    }
  }
  return true;
}

// Runs the backend on x (and dy) and compares every output's bits with the scalar formula.
bool check(Backend& be, const std::vector<float>& x, const std::vector<float>& dy, int threads) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(x.size()), dx(x.size()), y_ref(x.size()), dx_ref(x.size());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  be.gelu_forward(y.data(), x.data(), n);
  be.gelu_backward(dx.data(), x.data(), dy.data(), n);
  omp_set_num_threads(saved);
  for (size_t i = 0; i < x.size(); ++i) {
    y_ref[i] = scalar_forward(x[i]);
    dx_ref[i] = scalar_backward(x[i], dy[i]);
  }
  return same_bits_or_nan(y, y_ref, "gelu forward vs scalar") &&
         same_bits_or_nan(dx, dx_ref, "gelu backward vs scalar");
}

}  // namespace

TEST_CASE("gelu SIMD loops: every 1009th bit pattern, bitwise equal to the scalar formula") {
  auto be = make_cpu_backend();
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 1009) x.push_back(det::float_of_bits(static_cast<uint32_t>(b)));
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x00000001u, 0x807fffffu,
                     0x3f600000u, 0xbf600000u})
    x.push_back(det::float_of_bits(b));
  const std::vector<float> dy = test::uniform(x.size(), 3, -2.0f, 2.0f);
  CHECK(check(*be, x, dy, 2));
}

TEST_CASE("gelu SIMD loops: dense [-12, 12], odd lengths, 1 and 2 threads") {
  auto be = make_cpu_backend();
  for (int64_t n : {1, 15, 17, 4095, 4097, 200003}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -12.0f + 24.0f * static_cast<float>(i) / static_cast<float>(n);
    const std::vector<float> dy = test::uniform(x.size(), static_cast<uint32_t>(n), -1.0f, 1.0f);
    for (int threads : {1, 2}) {
      CAPTURE(n);
      CAPTURE(threads);
      CHECK(check(*be, x, dy, threads));
    }
  }
}
