// Parity of GEMM and the linear layer: CUDA canonical GEMM == CPU canonical GEMM bit for bit, for
// every transposition, fresh and accumulating chains, fp32/bf16/fp16 operands, sizes that are not
// multiples of any tile, padded leading dimensions, and every launch configuration; outputs inside
// guard bands. The vendor paths (cuBLAS SGEMM, TF32, GemmEx) are checked against the canonical
// result with tolerances (they are outside references, not bitwise claims). The exact GEMM
// (numerics.gemm = exact): CUDA == CPU bit for bit on random and adversarial operands.
#include <algorithm>
#include <cmath>
#include <limits>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

struct Shape3 {
  int m, n, k;
};

// The largest magnitude of the inputs for a precision: products and sums stay finite (fp16
// operands overflow to Inf above 65504).
float large_for(Precision p) { return p == Precision::fp16 ? 200.0f : 1e15f; }

// Stored elements of an operand of op-shape (rows, cols) with leading dimension ld.
size_t stored(bool trans, int rows, int cols, int ld) {
  const int r = trans ? cols : rows;
  return r == 0 ? 0 : static_cast<size_t>(r - 1) * ld + (trans ? rows : cols);
}

// pad: the leading dimensions' excess over the rows' widths (A, B; C gets 2). Pads that are
// multiples of 4 with widths that are too take the kernel's float4 staging; others the scalar one.
void check_gemm(Backend& cpu, Backend& gpu, Trans ta, Trans tb, Shape3 s, bool accumulate, Precision p, uint32_t seed,
                int pad_a = 3, int pad_b = 1) {
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  const int lda = (at ? s.m : s.k) + pad_a, ldb = (bt ? s.k : s.n) + pad_b, ldc = s.n + 2;
  const std::vector<float> a = parity_values(std::max<size_t>(stored(at, s.m, s.k, lda), 1), seed, large_for(p));
  const std::vector<float> b = parity_values(std::max<size_t>(stored(bt, s.k, s.n, ldb), 1), seed + 1, large_for(p));
  const std::vector<float> c0 = parity_values(static_cast<size_t>(s.m) * ldc, seed + 2, large_for(p));
  std::vector<float> c = c0;
  cpu.gemm({ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc, accumulate, p});
  Guarded ga(gpu, a.size(), a), gb(gpu, b.size(), b), gc(gpu, c0.size(), c0);
  gpu.gemm({ta, tb, s.m, s.n, s.k, ga.data(), lda, gb.data(), ldb, gc.data(), ldc, accumulate, p});
  check_output(gc, c,
               detail::concat("gemm ", s.m, "x", s.n, "x", s.k, " ta=", at, " tb=", bt, " acc=", accumulate,
                              " lda=", lda, " ldb=", ldb, " ", to_string(p), " on ", gpu.describe()));
  CHECK(ga.guards_intact());
  CHECK(gb.guards_intact());
}

TEST_CASE("canonical GEMM: CUDA equals the CPU bitwise for every tile, transposition and precision") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const Shape3 shapes[] = {{1, 1, 1},    {7, 13, 5},    {33, 65, 17}, {129, 70, 257},
                           {64, 128, 8}, {130, 131, 9}, {3, 200, 0},  {257, 33, 129}};
  uint32_t seed = 1;
  // parity_launches(), plus one launch for each tile of cuda_gemm_tiles() it does not name.
  std::vector<CudaLaunchConfig> launches = parity_launches();
  for (int t = 0; t < static_cast<int>(cuda_gemm_tiles().size()); ++t) {
    const bool named =
        std::any_of(launches.begin(), launches.end(), [t](const CudaLaunchConfig& l) { return l.gemm_tile == t; });
    if (!named) launches.push_back({t, 4, 256});
  }
  for (const CudaLaunchConfig& launch : launches) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (const Shape3& s : shapes) {
      for (Trans ta : {Trans::no, Trans::yes}) {
        for (Trans tb : {Trans::no, Trans::yes}) {
          for (bool acc : {false, true}) check_gemm(*cpu, *gpu, ta, tb, s, acc, Precision::fp32, seed += 3);
        }
      }
    }
    // float4 staging: every dimension and pad a multiple of 4.
    for (const Shape3& s : {Shape3{4, 4, 4}, Shape3{132, 68, 20}, Shape3{256, 260, 36}}) {
      for (Trans ta : {Trans::no, Trans::yes}) {
        for (Trans tb : {Trans::no, Trans::yes}) {
          for (bool acc : {false, true}) check_gemm(*cpu, *gpu, ta, tb, s, acc, Precision::fp32, seed += 3, 4, 8);
        }
      }
    }
    for (Precision p : {Precision::bf16, Precision::fp16}) {
      for (const Shape3& s : {Shape3{33, 65, 17}, Shape3{129, 70, 257}, Shape3{68, 132, 40}}) {
        check_gemm(*cpu, *gpu, Trans::no, Trans::yes, s, false, p, seed += 3);
        check_gemm(*cpu, *gpu, Trans::yes, Trans::no, s, true, p, seed += 3);
        check_gemm(*cpu, *gpu, Trans::no, Trans::no, s, false, p, seed += 3, 0, 0);
      }
    }
  }
}

TEST_CASE("canonical GEMM: a large product and Newton–Schulz's X·Xᵀ (both operands the same buffer)") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  auto gpu = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  check_gemm(*cpu, *gpu, Trans::no, Trans::no, {515, 771, 1029}, false, Precision::fp32, 99);
  check_gemm(*cpu, *gpu, Trans::no, Trans::yes, {516, 772, 1028}, true, Precision::fp32, 98, 0, 0);
  const int r = 96, c = 200;  // X (r, c): A = X·Xᵀ (r, r)
  const std::vector<float> x = parity_values(static_cast<size_t>(r) * c, 5, 10.0f);
  std::vector<float> a(static_cast<size_t>(r) * r);
  cpu->gemm({Trans::no, Trans::yes, r, r, c, x.data(), c, x.data(), c, a.data(), r, false, Precision::bf16});
  Guarded gx(*gpu, x.size(), x), ga(*gpu, a.size());
  gpu->gemm({Trans::no, Trans::yes, r, r, c, gx.data(), c, gx.data(), c, ga.data(), r, false, Precision::bf16});
  check_output(ga, a, "X·Xᵀ bf16");
}

Numerics exact_numerics(Precision p) { return {GemmMode::exact, ReduceMode::canonical, p}; }

TEST_CASE("exact GEMM: CUDA equals the CPU's exact GEMM bitwise (random operands)") {
  require_gpu();
  const Shape3 shapes[] = {{1, 1, 1}, {7, 13, 5}, {33, 65, 17}, {129, 70, 257}, {3, 200, 0}, {40, 36, 1031}};
  uint32_t seed = 500;
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    auto cpu = make_cpu_backend(exact_numerics(p));
    auto gpu = make_parity_gpu(exact_numerics(p), CudaLaunchConfig{});
    for (const Shape3& s : shapes)
      for (Trans ta : {Trans::no, Trans::yes})
        for (Trans tb : {Trans::no, Trans::yes})
          for (bool acc : {false, true}) check_gemm(*cpu, *gpu, ta, tb, s, acc, p, seed += 3);
  }
}

// Values over ~60 binades within each line, exact zeros, subnormals, both signs; bad > 0 puts an
// Inf, a −Inf and a NaN at spaced places.
std::vector<float> adversarial(size_t count, uint32_t seed, bool bad) {
  std::vector<float> x = parity_values(count, seed, 1.0f);
  for (size_t i = 0; i < count; ++i) {
    x[i] = std::ldexp(x[i], static_cast<int>((i * 2654435761u + seed) % 61) - 30);
    if (i % 17 == 3) x[i] = 0.0f;
    if (i % 29 == 5) x[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i % 1000);
    if (bad && i % 997 == 11) x[i] = (i / 997) % 3 == 0 ? INFINITY : (i / 997) % 3 == 1 ? -INFINITY : NAN;
  }
  return x;
}

TEST_CASE("exact GEMM: CUDA equals the CPU's exact GEMM bitwise (wide ranges, subnormals, Inf/NaN, k = 50257)") {
  require_gpu();
  struct Case {
    int m, n, k;
    bool bad;
  };
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    auto cpu = make_cpu_backend(exact_numerics(p));
    auto gpu = make_parity_gpu(exact_numerics(p), CudaLaunchConfig{});
    for (const Case& e : {Case{37, 70, 301, false}, Case{64, 48, 2000, true}, Case{3, 5, 50257, false}}) {
      const auto a = adversarial(static_cast<size_t>(e.m) * e.k, 7, e.bad);
      const auto b = adversarial(static_cast<size_t>(e.k) * e.n, 8, e.bad);
      std::vector<float> c(static_cast<size_t>(e.m) * e.n);
      cpu->gemm({Trans::no, Trans::no, e.m, e.n, e.k, a.data(), e.k, b.data(), e.n, c.data(), e.n, false, p});
      Guarded ga(*gpu, a.size(), a), gb(*gpu, b.size(), b), gc(*gpu, c.size());
      gpu->gemm({Trans::no, Trans::no, e.m, e.n, e.k, ga.data(), e.k, gb.data(), e.n, gc.data(), e.n, false, p});
      check_output(gc, c, detail::concat("exact gemm ", e.m, "x", e.n, "x", e.k, " ", to_string(p)));
    }
  }
}

// Every digit 63 (|x| = 1 − 2⁻²⁴: X = 2²⁴ − 1): the four slice pairs of the middle weight add
// 4 · k · 63² per output, past int32 at k = 140 000, so the kernel must widen between chunks of k.
TEST_CASE("exact GEMM: CUDA widens the int32 sums between chunks of k (every digit 63, k = 140 000)") {
  require_gpu();
  const int m = 17, n = 9, k = 140000;
  const float top = std::nextafter(1.0f, 0.0f);
  std::vector<float> a(static_cast<size_t>(m) * k, top), b(static_cast<size_t>(k) * n, top);
  for (size_t i = 0; i < a.size(); i += 7) a[i] = -top;
  std::vector<float> c(static_cast<size_t>(m) * n, 0.5f);
  auto cpu = make_cpu_backend(exact_numerics(Precision::fp32));
  auto gpu = make_parity_gpu(exact_numerics(Precision::fp32), CudaLaunchConfig{});
  Guarded ga(*gpu, a.size(), a), gb(*gpu, b.size(), b), gc(*gpu, c.size(), c);
  cpu->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, c.data(), n, true, Precision::fp32});
  gpu->gemm({Trans::no, Trans::no, m, n, k, ga.data(), k, gb.data(), n, gc.data(), n, true, Precision::fp32});
  check_output(gc, c, "exact gemm 17x9x140000, every digit 63");
}

void check_linear(Backend& cpu, Backend& gpu, int N, int C, int OC) {
  const std::vector<float> inp = parity_values(static_cast<size_t>(N) * C, 1, 1e10f);
  const std::vector<float> w = parity_values(static_cast<size_t>(OC) * C, 2, 1e10f);
  const std::vector<float> bias = parity_values(OC, 3, 1e10f);
  const std::vector<float> dout = parity_values(static_cast<size_t>(N) * OC, 4, 1e10f);
  std::vector<float> out(static_cast<size_t>(N) * OC), dinp(static_cast<size_t>(N) * C),
      dw(static_cast<size_t>(OC) * C), db(OC);
  cpu.matmul_forward(out.data(), inp.data(), w.data(), bias.data(), N, C, OC);
  cpu.matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C, OC);
  Guarded ginp(gpu, inp.size(), inp), gw(gpu, w.size(), w), gbias(gpu, bias.size(), bias),
      gdout(gpu, dout.size(), dout), gout(gpu, out.size()), gdinp(gpu, dinp.size()), gdw(gpu, dw.size()),
      gdb(gpu, db.size());
  gpu.matmul_forward(gout.data(), ginp.data(), gw.data(), gbias.data(), N, C, OC);
  gpu.matmul_backward(gdinp.data(), gdw.data(), gdb.data(), gdout.data(), ginp.data(), gw.data(), N, C, OC);
  const std::string on = detail::concat(" N=", N, " C=", C, " OC=", OC, " on ", gpu.describe());
  check_output(gout, out, "matmul_forward" + on);
  check_output(gdinp, dinp, "matmul_backward dinp" + on);
  check_output(gdw, dw, "matmul_backward dw" + on);
  check_output(gdb, db, "matmul_backward dbias" + on);
}

TEST_CASE("linear layer forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    auto cpu = make_cpu_backend(Numerics::deterministic(p));
    for (const CudaLaunchConfig& launch : parity_launches()) {
      auto gpu = make_parity_gpu(Numerics::deterministic(p), launch);
      check_linear(*cpu, *gpu, 77, 45, 131);
      check_linear(*cpu, *gpu, 64, 48, 132);  // float4 staging
    }
  }
}

// max |gpu − ref| / Σ_k |a||b| over C: the error relative to the magnitude of the terms.
double relative_error(const std::vector<float>& gpu, const std::vector<float>& ref, const std::vector<float>& a,
                      const std::vector<float>& b, int m, int n, int k) {
  double worst = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double mag = 0;
      for (int p = 0; p < k; ++p)
        mag += std::fabs(static_cast<double>(a[static_cast<size_t>(i) * k + p]) * b[static_cast<size_t>(p) * n + j]);
      const size_t o = static_cast<size_t>(i) * n + j;
      worst = std::max(worst, std::fabs(static_cast<double>(gpu[o]) - ref[o]) / std::max(mag, 1e-30));
    }
  }
  return worst;
}

TEST_CASE("vendor GEMM (cuBLAS SGEMM, TF32, bf16/fp16 GemmEx) agrees with the canonical chain") {
  require_gpu();
  const int m = 150, n = 97, k = 301;
  const std::vector<float> a = parity_values(static_cast<size_t>(m) * k, 1, 4.0f);
  const std::vector<float> b = parity_values(static_cast<size_t>(k) * n, 2, 4.0f);
  struct Case {
    Precision p;
    bool tf32;
    double tolerance;  // relative to Σ|a||b|: k·2^-24 for fp32 accumulation; TF32: 10-bit operands
  };
  for (const Case& cs : {Case{Precision::fp32, false, 2e-5}, Case{Precision::fp32, true, 2e-3},
                         Case{Precision::bf16, false, 2e-5}, Case{Precision::fp16, false, 2e-5}}) {
    auto cpu = make_cpu_backend(Numerics::deterministic(cs.p));
    std::vector<float> ref(static_cast<size_t>(m) * n);
    cpu->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, ref.data(), n, false, cs.p});
    CudaOptions options;
    options.vendor_tf32 = cs.tf32;
    auto gpu = make_cuda_backend(Numerics::vendor(cs.p), options, 0);
    Guarded ga(*gpu, a.size(), a), gb(*gpu, b.size(), b), gc(*gpu, ref.size());
    gpu->gemm({Trans::no, Trans::no, m, n, k, ga.data(), k, gb.data(), n, gc.data(), n, false, cs.p});
    const double err = relative_error(gc.interior(), ref, a, b, m, n, k);
    MESSAGE("vendor ", to_string(cs.p), cs.tf32 ? " TF32" : "", ": max relative error ", err);
    CHECK(err <= cs.tolerance);
    CHECK(gc.guards_intact());
  }
}

}  // namespace
}  // namespace sb::test
