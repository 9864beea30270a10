// bench_blas_check: before a benchmark runs OpenBLAS with this machine's own kernel (bench/native-blas
// unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for it, and sets the CPU's core where the library
// names the CPU below its ISA), check that kernel's sgemm against a float64 reference: every
// transposition, k across OpenBLAS's k-blocks, 1 and 2 threads. An output passes when
// |c - ref| <= k·2^-24·Σ|a||b| (the worst-case bound of any fp32 summation order); a wrong kernel
// misses it by orders of magnitude. Prints one JSON line (the core name, this CPU's core by cpuid,
// the largest error relative to that bound) and exits 1 when any output misses the bound.
// `bench_blas_check --native-core` prints only the loaded core and the core to run: the loaded
// one, or this CPU's when the loaded one is below it (core/cpu/blas_version.hpp).
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "samebits/core/cpu/blas_version.hpp"

namespace {

struct Check {
  double worst = 0;  // max over outputs of |c - ref| / bound
};

void fill(std::vector<float>& v, uint32_t& state) {
  for (float& x : v) x = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
}

// One sgemm C = op(A)·op(B), op(A) m×k, op(B) k×n, row-major, against float64.
void check(bool ta, bool tb, int m, int n, int k, Check& out) {
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(static_cast<size_t>(m) * n);
  uint32_t state = 2024u + static_cast<uint32_t>(m * 7 + n * 3 + k);
  fill(a, state);
  fill(b, state);
  const int lda = ta ? m : k, ldb = tb ? k : n;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a.data(),
              lda, b.data(), ldb, 0.0f, c.data(), n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        const double x = a[ta ? size_t(p) * lda + i : size_t(i) * lda + p];
        const double y = b[tb ? size_t(j) * ldb + p : size_t(p) * ldb + j];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      const double bound = k * std::ldexp(1.0, -24) * mag;
      const double err = std::fabs(static_cast<double>(c[size_t(i) * n + j]) - ref);
      out.worst = std::fmax(out.worst, bound > 0 ? err / bound : (err > 0 ? INFINITY : 0));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string loaded = sb::blas_core(), cpu = sb::blas_core_for_this_cpu();
  if (argc == 2 && std::string(argv[1]) == "--native-core") {
    const bool below = !cpu.empty() && sb::blas_core_level(loaded) < sb::blas_core_level(cpu);
    std::printf("%s %s\n", loaded.c_str(), below ? cpu.c_str() : loaded.c_str());
    return 0;
  }
  Check result;
  for (const int threads : {1, 2}) {
    openblas_set_num_threads(threads);
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        check(ta, tb, 96, 80, 1100, result);  // k across OpenBLAS's k-blocks
        check(ta, tb, 257, 130, 64, result);  // edge tiles
      }
    check(false, true, 512, 384, 128, result);  // the default model's qkv shape
  }
  const bool ok = result.worst <= 1.0;
  std::printf(
      "{\"openblas_core\": \"%s\", \"cpu_core\": \"%s\", \"openblas_config\": \"%s\", "
      "\"worst_error_over_bound\": %.3g, \"ok\": %s}\n",
      loaded.c_str(), cpu.c_str(), openblas_get_config(), result.worst, ok ? "true" : "false");
  return ok ? 0 : 1;
}
