// Helpers shared by the op tests (tests/unit/test_op_*.cpp): seeded inputs, bitwise comparison,
// and central finite differences in fp64 of a test-local fp64 reference forward.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sb::test {

// n values uniform in [lo, hi), from a fixed seed.
inline std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// n small integers in [-range, range] as floats (products and sums stay exact in fp32).
inline std::vector<float> integers(size_t n, uint32_t seed, int range) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(rng));
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// Bitwise equality of two float arrays (memcmp of the encodings); reports the first difference.
inline bool same_bits(const float* a, const float* b, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) {
      MESSAGE(std::string(what), ": first difference at element ", i, ": ", a[i], " vs ", b[i]);
      return false;
    }
  }
  return true;
}
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  if (a.size() != b.size()) return false;
  return same_bits(a.data(), b.data(), a.size(), what);
}

// Central differences of L at every element of x (perturbed in place, restored): (L(x+h) −
// L(x−h)) / 2h, h = 1e-6·max(1, |x_i|), all in fp64.
inline std::vector<double> fd_gradient(std::vector<double>& x, const std::function<double()>& loss) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    const double h = 1e-6 * std::fmax(1.0, std::fabs(x0));
    x[i] = x0 + h;
    const double up = loss();
    x[i] = x0 - h;
    const double down = loss();
    x[i] = x0;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Every analytic (fp32) gradient within rtol of the fp64 numeric one, relative to the larger of
// its magnitude and the RMS of all numeric gradients; returns the largest relative error seen
// (and prints it unless quiet).
inline double check_gradient(const std::vector<float>& analytic, const std::vector<double>& numeric, double rtol,
                             const char* what, bool quiet = false) {
  REQUIRE(analytic.size() == numeric.size());
  double ss = 0;
  for (double g : numeric) ss += g * g;
  const double rms = std::sqrt(ss / static_cast<double>(numeric.size()));
  REQUIRE_MESSAGE(rms > 0, std::string(what), ": all numeric gradients are zero, the check would be empty");
  double worst = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double err = std::fabs(analytic[i] - numeric[i]) / std::fmax(std::fabs(numeric[i]), rms);
    worst = std::fmax(worst, err);
    if (err > rtol) {
      FAIL_CHECK(std::string(what), ": element ", i, " analytic ", analytic[i], " numeric ", numeric[i],
                 " relative error ", err);
      return err;
    }
  }
  if (!quiet) MESSAGE(std::string(what), ": max relative error vs fp64 finite differences ", worst);
  return worst;
}

// Σ r·y in fp64: the scalar objective whose gradient w.r.t. y is r (the upstream gradient).
inline double project(const std::vector<double>& y, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(r[i]) * y[i];
  return s;
}

}  // namespace sb::test
