// Parity of a Mixture-of-Experts block's row ops (gather, scatter-add, combine and its backward):
// CUDA equals the CPU bit for bit on a routing with shared experts, top-2 selections and dropped
// slots, under every launch configuration; outputs inside guard bands.
#include <numeric>
#include <random>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

TEST_CASE("MoE gather, scatter-add, combine and its backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const int N = 301, C = 77, J = 3, E = 8;  // one shared expert, top-2 of 8 routed
  // Rows: the shared expert's N, then each routed expert's tokens in position order; every 7th
  // token's second slot dropped.
  std::mt19937 rng(11);
  std::vector<std::vector<int>> picks(static_cast<size_t>(N));
  for (auto& p : picks) {
    const int a = int(rng() % E), b = (a + 1 + int(rng() % (E - 1))) % E;
    p = {std::min(a, b), std::max(a, b)};
  }
  std::vector<int32_t> token, rows(size_t(N) * J, -1);
  for (int t = 0; t < N; ++t) rows[size_t(t) * J] = int32_t(token.size()), token.push_back(t);
  for (int e = 0; e < E; ++e)
    for (int t = 0; t < N; ++t)
      for (int j = 0; j < 2; ++j)
        if (picks[size_t(t)][size_t(j)] == e && !(j == 1 && t % 7 == 0))
          rows[size_t(t) * J + 1 + j] = int32_t(token.size()), token.push_back(t);
  const int R = int(token.size());
  std::vector<float> gates = parity_values(size_t(N) * J, 3, 1.0f);
  const std::vector<float> x = parity_values(size_t(N) * C, 4, 1e15f), y = parity_values(size_t(R) * C, 5, 1e15f);
  const std::vector<float> dout = parity_values(size_t(N) * C, 6, 1e15f), dxe = parity_values(size_t(R) * C, 7, 1e15f);
  std::vector<float> xe(size_t(R) * C), dx = dout, out(size_t(N) * C), dy(size_t(R) * C), dgates(size_t(N) * J);
  cpu->moe_gather(xe.data(), x.data(), token.data(), N, R, C);
  cpu->moe_scatter_add(dx.data(), dxe.data(), rows.data(), N, R, J, C);
  cpu->moe_combine(out.data(), y.data(), rows.data(), gates.data(), N, R, J, C);
  cpu->moe_combine_backward(dy.data(), dgates.data(), dout.data(), y.data(), rows.data(), gates.data(), N, R, J, C);
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    Guarded gx(*gpu, size_t(N) * C, x), gy(*gpu, size_t(R) * C, y), gdout(*gpu, size_t(N) * C, dout),
        gdxe(*gpu, size_t(R) * C, dxe), ggates(*gpu, size_t(N) * J, gates), gxe(*gpu, size_t(R) * C),
        gdx(*gpu, size_t(N) * C, dout), gout(*gpu, size_t(N) * C), gdy(*gpu, size_t(R) * C),
        gdgates(*gpu, size_t(N) * J);
    Tensor gtoken = gpu->alloc(DType::i32, {R}), grows = gpu->alloc(DType::i32, {int64_t(N) * J});
    gpu->copy_from_host(gtoken.data(), token.data(), token.size() * sizeof(int32_t));
    gpu->copy_from_host(grows.data(), rows.data(), rows.size() * sizeof(int32_t));
    const int32_t *tk = gtoken.data_as<int32_t>(), *rw = grows.data_as<int32_t>();
    gpu->moe_gather(gxe.data(), gx.data(), tk, N, R, C);
    gpu->moe_scatter_add(gdx.data(), gdxe.data(), rw, N, R, J, C);
    gpu->moe_combine(gout.data(), gy.data(), rw, ggates.data(), N, R, J, C);
    gpu->moe_combine_backward(gdy.data(), gdgates.data(), gdout.data(), gy.data(), rw, ggates.data(), N, R, J, C);
    check_output(gxe, xe, "moe_gather on " + gpu->describe());
    check_output(gdx, dx, "moe_scatter_add on " + gpu->describe());
    check_output(gout, out, "moe_combine on " + gpu->describe());
    check_output(gdy, dy, "moe_combine_backward rows on " + gpu->describe());
    check_output(gdgates, dgates, "moe_combine_backward gates on " + gpu->describe());
  }
}

}  // namespace
}  // namespace sb::test
