// Parity of LayerNorm, RMSNorm and QK-norm, forward and backward: CUDA (one warp per row, shuffles in
// det::lane32_fold's order; per-channel token chains) equals the CPU bit for bit, for row lengths
// below, at and above multiples of 32, with and without bias, under every launch configuration;
// outputs inside guard bands.
#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

struct Size2 {
  int N, C;
};
constexpr Size2 kSizes[] = {{1, 1}, {37, 31}, {5, 33}, {300, 100}, {17, 773}};

TEST_CASE("LayerNorm forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  uint32_t seed = 1;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (const Size2 s : kSizes) {
      for (bool bias : {true, false}) {
        const size_t NC = static_cast<size_t>(s.N) * s.C;
        const std::vector<float> x = parity_values(NC, seed += 5, 1e18f);
        const std::vector<float> w = parity_values(s.C, seed + 1, 1e3f);
        const std::vector<float> b = parity_values(s.C, seed + 2, 1e3f);
        const std::vector<float> dy = parity_values(NC, seed + 3, 1e6f);
        std::vector<float> out(NC), mean(s.N), rstd(s.N), dx(NC), dw(s.C), db(s.C);
        cpu->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias ? b.data() : nullptr, s.N,
                               s.C);
        cpu->layernorm_backward(dx.data(), dw.data(), bias ? db.data() : nullptr, dy.data(), x.data(), w.data(),
                                mean.data(), rstd.data(), s.N, s.C);
        Guarded gx(*gpu, NC, x), gw(*gpu, s.C, w), gb(*gpu, s.C, b), gdy(*gpu, NC, dy), gout(*gpu, NC),
            gmean(*gpu, s.N), grstd(*gpu, s.N), gdx(*gpu, NC), gdw(*gpu, s.C), gdb(*gpu, s.C);
        gpu->layernorm_forward(gout.data(), gmean.data(), grstd.data(), gx.data(), gw.data(),
                               bias ? gb.data() : nullptr, s.N, s.C);
        gpu->layernorm_backward(gdx.data(), gdw.data(), bias ? gdb.data() : nullptr, gdy.data(), gx.data(), gw.data(),
                                gmean.data(), grstd.data(), s.N, s.C);
        const std::string on = detail::concat(" N=", s.N, " C=", s.C, " bias=", bias, " on ", gpu->describe());
        check_output(gout, out, "layernorm out" + on);
        check_output(gmean, mean, "layernorm mean" + on);
        check_output(grstd, rstd, "layernorm rstd" + on);
        check_output(gdx, dx, "layernorm dinp" + on);
        check_output(gdw, dw, "layernorm dw" + on);
        if (bias) check_output(gdb, db, "layernorm db" + on);
      }
    }
  }
}

TEST_CASE("RMSNorm forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  uint32_t seed = 1000;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (const Size2 s : kSizes) {
      const size_t NC = static_cast<size_t>(s.N) * s.C;
      const std::vector<float> x = parity_values(NC, seed += 5, 1e18f);
      const std::vector<float> w = parity_values(s.C, seed + 1, 1e3f);
      const std::vector<float> dy = parity_values(NC, seed + 3, 1e6f);
      std::vector<float> out(NC), rstd(s.N), dx(NC), dw(s.C);
      cpu->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), s.N, s.C);
      cpu->rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), s.N, s.C);
      Guarded gx(*gpu, NC, x), gw(*gpu, s.C, w), gdy(*gpu, NC, dy), gout(*gpu, NC), grstd(*gpu, s.N), gdx(*gpu, NC),
          gdw(*gpu, s.C);
      gpu->rmsnorm_forward(gout.data(), grstd.data(), gx.data(), gw.data(), s.N, s.C);
      gpu->rmsnorm_backward(gdx.data(), gdw.data(), gdy.data(), gx.data(), gw.data(), grstd.data(), s.N, s.C);
      const std::string on = detail::concat(" N=", s.N, " C=", s.C, " on ", gpu->describe());
      check_output(gout, out, "rmsnorm out" + on);
      check_output(grstd, rstd, "rmsnorm rstd" + on);
      check_output(gdx, dx, "rmsnorm dinp" + on);
      check_output(gdw, dw, "rmsnorm dw" + on);
    }
  }
}

TEST_CASE("QK-norm forward and backward: CUDA equals the CPU bitwise, continuing chains too") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  struct Heads {
    int N, NH, G, hd;
  };
  uint32_t seed = 2000;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (const Heads s : {Heads{37, 4, 4, 16}, Heads{301, 6, 2, 33}, Heads{5, 8, 1, 64}}) {
      for (bool accumulate : {false, true}) {
        const size_t NW = size_t(s.N) * (s.NH + 2 * s.G) * s.hd, R = size_t(s.N) * (s.NH + s.G);
        const std::vector<float> x = parity_values(NW, seed += 5, 1e18f);
        const std::vector<float> wq = parity_values(s.hd, seed + 1, 1e3f), wk = parity_values(s.hd, seed + 2, 1e3f);
        const std::vector<float> dy = parity_values(NW, seed + 3, 1e6f);
        const std::vector<float> start = parity_values(2 * size_t(s.hd), seed + 4, 1e6f);
        std::vector<float> out(NW), rstd(R), dx(NW), dwq(start.begin(), start.begin() + s.hd),
            dwk(start.begin() + s.hd, start.end());
        cpu->qk_norm_forward(out.data(), rstd.data(), x.data(), wq.data(), wk.data(), s.N, s.NH, s.G, s.hd);
        cpu->qk_norm_backward(dx.data(), dwq.data(), dwk.data(), dy.data(), x.data(), wq.data(), wk.data(), rstd.data(),
                              s.N, s.NH, s.G, s.hd, accumulate);
        Guarded gx(*gpu, NW, x), gwq(*gpu, s.hd, wq), gwk(*gpu, s.hd, wk), gdy(*gpu, NW, dy), gout(*gpu, NW),
            grstd(*gpu, R), gdx(*gpu, NW), gdwq(*gpu, s.hd, {start.begin(), start.begin() + s.hd}),
            gdwk(*gpu, s.hd, {start.begin() + s.hd, start.end()});
        gpu->qk_norm_forward(gout.data(), grstd.data(), gx.data(), gwq.data(), gwk.data(), s.N, s.NH, s.G, s.hd);
        gpu->qk_norm_backward(gdx.data(), gdwq.data(), gdwk.data(), gdy.data(), gx.data(), gwq.data(), gwk.data(),
                              grstd.data(), s.N, s.NH, s.G, s.hd, accumulate);
        const std::string on = detail::concat(" N=", s.N, " NH=", s.NH, " G=", s.G, " hd=", s.hd,
                                              " accumulate=", accumulate, " on ", gpu->describe());
        check_output(gout, out, "qk_norm out" + on);
        check_output(grstd, rstd, "qk_norm rstd" + on);
        check_output(gdx, dx, "qk_norm dinp" + on);
        check_output(gdwq, dwq, "qk_norm dwq" + on);
        check_output(gdwk, dwk, "qk_norm dwk" + on);
      }
    }
  }
}

}  // namespace
}  // namespace sb::test
