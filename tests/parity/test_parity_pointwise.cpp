// Parity of the elementwise and embedding ops: GELU, SwiGLU and rotary positions forward/backward, the residual
// addition (also in place), token + position embedding forward and backward (dwte accumulating into existing values,
// dwpe rows beyond T untouched) — CUDA equals the CPU bit for bit under every launch configuration, for lengths that
// are not multiples of any block size; outputs inside guard bands.
#include <random>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/rope.hpp"

namespace sb::test {
namespace {

TEST_CASE("GELU forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int64_t n = 1000003;
  const std::vector<float> x = parity_values(n, 1, 1e15f);
  const std::vector<float> dy = parity_values(n, 2, 1e15f);
  std::vector<float> y(n), dx(n);
  cpu->gelu_forward(y.data(), x.data(), n);
  cpu->gelu_backward(dx.data(), x.data(), dy.data(), n);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gx(*gpu, n, x), gdy(*gpu, n, dy), gy(*gpu, n), gdx(*gpu, n);
    gpu->gelu_forward(gy.data(), gx.data(), n);
    gpu->gelu_backward(gdx.data(), gx.data(), gdy.data(), n);
    check_output(gy, y, "gelu_forward on " + gpu->describe());
    check_output(gdx, dx, "gelu_backward on " + gpu->describe());
  }
}

TEST_CASE("SwiGLU forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int64_t N = 1001, F = 517;                                   // neither a multiple of any block size
  const std::vector<float> x = parity_values(2 * N * F, 5, 200.0f);  // exp(−g) overflows at both ends
  const std::vector<float> dy = parity_values(N * F, 6, 1e15f);
  std::vector<float> y(N * F), dx(2 * N * F);
  cpu->swiglu_forward(y.data(), x.data(), N, F);
  cpu->swiglu_backward(dx.data(), x.data(), dy.data(), N, F);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gx(*gpu, 2 * N * F, x), gdy(*gpu, N * F, dy), gy(*gpu, N * F), gdx(*gpu, 2 * N * F);
    gpu->swiglu_forward(gy.data(), gx.data(), N, F);
    gpu->swiglu_backward(gdx.data(), gx.data(), gdy.data(), N, F);
    check_output(gy, y, "swiglu_forward on " + gpu->describe());
    check_output(gdx, dx, "swiglu_backward on " + gpu->describe());
  }
}

TEST_CASE("rotary positions forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int B = 3, T = 37, NH = 5, hd = 22, C = NH * hd;
  std::vector<float> table(size_t(T) * hd);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < hd / 2; ++i) {
      table[size_t(t) * hd + 2 * size_t(i)] = ops::rope_cos(t, i, hd, 10000.0f);
      table[size_t(t) * hd + 2 * size_t(i) + 1] = ops::rope_sin(t, i, hd, 10000.0f);
    }
  const int64_t n = int64_t(B) * T * 3 * C;
  const std::vector<float> x = parity_values(n, 7, 1e15f);
  std::vector<float> y = x, dx = x;
  cpu->rope_forward(y.data(), table.data(), B, T, C, NH);
  cpu->rope_backward(dx.data(), table.data(), B, T, C, NH);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gy(*gpu, n, x), gdx(*gpu, n, x), gt(*gpu, int64_t(table.size()), table);
    gpu->rope_forward(gy.data(), gt.data(), B, T, C, NH);
    gpu->rope_backward(gdx.data(), gt.data(), B, T, C, NH);
    check_output(gy, y, "rope_forward on " + gpu->describe());
    check_output(gdx, dx, "rope_backward on " + gpu->describe());
  }
}

TEST_CASE("grouped-query key/value repeat, forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int N = 1001, NH = 6, G = 2, hd = 37;
  const int64_t W = int64_t{N} * (NH + 2 * G) * hd, M = int64_t{N} * 3 * NH * hd;
  const std::vector<float> x = parity_values(W, 8, 1e15f);
  const std::vector<float> dy = parity_values(M, 9, 3e38f);  // sums over query heads may overflow
  std::vector<float> y(M), dx(W);
  cpu->kv_repeat_forward(y.data(), x.data(), N, NH, G, hd);
  cpu->kv_repeat_backward(dx.data(), dy.data(), N, NH, G, hd);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gx(*gpu, W, x), gdy(*gpu, M, dy), gy(*gpu, M), gdx(*gpu, W);
    gpu->kv_repeat_forward(gy.data(), gx.data(), N, NH, G, hd);
    gpu->kv_repeat_backward(gdx.data(), gdy.data(), N, NH, G, hd);
    check_output(gy, y, "kv_repeat_forward on " + gpu->describe());
    check_output(gdx, dx, "kv_repeat_backward on " + gpu->describe());
  }
}

TEST_CASE("residual addition, out of place and in place: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int64_t n = 100003;
  const std::vector<float> a = parity_values(n, 3, 3e38f);  // sums may overflow to ±Inf, as on the CPU
  const std::vector<float> b = parity_values(n, 4, 3e38f);
  std::vector<float> out(n), inplace = a;
  cpu->residual_forward(out.data(), a.data(), b.data(), n);
  cpu->residual_forward(inplace.data(), inplace.data(), b.data(), n);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded ga(*gpu, n, a), gb(*gpu, n, b), gout(*gpu, n);
    gpu->residual_forward(gout.data(), ga.data(), gb.data(), n);
    check_output(gout, out, "residual_forward on " + gpu->describe());
    gpu->residual_forward(ga.data(), ga.data(), gb.data(), n);
    check_output(ga, inplace, "residual_forward in place on " + gpu->describe());
  }
}

TEST_CASE("embedding forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int B = 3, T = 17, T_max = 20, C = 37, V = 50;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> tok(0, V - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(B) * T);
  for (int32_t& t : tokens) t = tok(rng) % 12;  // repeats: rows with many tokens, rows with none
  tokens[5] = V - 1;
  const std::vector<float> wte = parity_values(static_cast<size_t>(V) * C, 6, 1e20f);
  const std::vector<float> wpe = parity_values(static_cast<size_t>(T_max) * C, 7, 1e20f);
  const std::vector<float> dout = parity_values(static_cast<size_t>(B) * T * C, 8, 1e20f);
  const std::vector<float> dwte0 = parity_values(static_cast<size_t>(V) * C, 9, 1e20f);
  const std::vector<float> dwpe0 = parity_values(static_cast<size_t>(T_max) * C, 10, 1e20f);
  std::vector<float> out(static_cast<size_t>(B) * T * C), dwte = dwte0, dwpe = dwpe0;
  cpu->embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C, {0, V});
  cpu->embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V, {0, V});
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Tensor gtok = device_ints(*gpu, tokens);
    Guarded gwte(*gpu, wte.size(), wte), gwpe(*gpu, wpe.size(), wpe), gdout(*gpu, dout.size(), dout),
        gout(*gpu, out.size()), gdwte(*gpu, dwte0.size(), dwte0), gdwpe(*gpu, dwpe0.size(), dwpe0);
    gpu->embedding_forward(gout.data(), gtok.data_as<int32_t>(), gwte.data(), gwpe.data(), B, T, C, {0, V});
    gpu->embedding_backward(gdwte.data(), gdwpe.data(), gdout.data(), gtok.data_as<int32_t>(), B, T, C, V, {0, V});
    check_output(gout, out, "embedding_forward on " + gpu->describe());
    check_output(gdwte, dwte, "embedding_backward dwte on " + gpu->describe());
    check_output(gdwpe, dwpe, "embedding_backward dwpe on " + gpu->describe());
  }
}

TEST_CASE("embedding backward rejects a token outside the vocabulary, as the CPU does") {
  require_gpu();
  auto gpu = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  const std::vector<int32_t> tokens = {1, 2, 7};
  Tensor gtok = device_ints(*gpu, tokens);
  Guarded dwte(*gpu, 5 * 4, std::vector<float>(20, 0.0f)), dwpe(*gpu, 3 * 4),
      dout(*gpu, 12, std::vector<float>(12, 1.0f));
  CHECK_THROWS_AS(
      gpu->embedding_backward(dwte.data(), dwpe.data(), dout.data(), gtok.data_as<int32_t>(), 1, 3, 4, 5, {0, 5}),
      sb::Error);
}

}  // namespace
}  // namespace sb::test
