// AdamW: several steps against an fp64 reference of torch.optim.AdamW's algorithm (bias
// correction, decoupled decay on 2-D tensors only), its fp32 constants, and the state layout.
#include <doctest/doctest.h>

#include <cmath>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/optim/adamw.hpp"
#include "test_optim_support.hpp"

namespace {

using sb::test::make_layout;
using sb::test::random_flat;

}  // namespace

TEST_CASE("adamw: five steps equal the fp64 reference") {
  size_t flat = 0;
  const auto layout = make_layout({{"w", {12, 20}, sb::ParamKind::matrix},
                                   {"emb", {16, 8}, sb::ParamKind::embedding},
                                   {"gain", {20}, sb::ParamKind::norm},
                                   {"bias", {20}, sb::ParamKind::bias}},
                                  &flat);
  auto be = sb::make_cpu_backend();
  sb::AdamWOptions o;
  o.lr = 0.1;  // large against the weights (std 0.01), so W's own rounding stays below 1e-6·lr
  o.weight_decay = 0.1;
  o.betas = {0.9, 0.95};
  o.eps = 1e-8;
  sb::AdamW opt(layout, *be, o);
  std::vector<float> w = random_flat(layout, flat, 1, 0.01f);
  std::vector<double> w64(w.begin(), w.end()), m(flat, 0.0), v(flat, 0.0);
  const std::vector<float> w0 = w;
  for (int t = 1; t <= 5; ++t) {
    const std::vector<float> g = random_flat(layout, flat, 10 + t, 0.5f);
    sb::StepContext ctx;
    ctx.step = t;
    ctx.lr_factor = 0.2 * t;
    opt.step(w.data(), g.data(), ctx);
    const double lr = o.lr * ctx.lr_factor;
    for (const auto& p : layout) {
      const double wd = p.shape.size() >= 2 ? o.weight_decay : 0.0;
      for (size_t i = p.offset; i < p.offset + p.numel; ++i) {
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.95 * v[i] + 0.05 * static_cast<double>(g[i]) * g[i];
        const double mhat = m[i] / (1.0 - std::pow(0.9, t));
        const double vhat = v[i] / (1.0 - std::pow(0.95, t));
        w64[i] = w64[i] * (1.0 - lr * wd) - lr * mhat / (std::sqrt(vhat) + 1e-8);
      }
    }
  }
  double worst = 0.0;
  for (const auto& p : layout) {
    for (size_t i = p.offset; i < p.offset + p.numel; ++i) {
      const double d_sb = static_cast<double>(w[i]) - w0[i], d_ref = w64[i] - w0[i];
      worst = std::max(worst, std::fabs(d_sb - d_ref) / o.lr);
    }
  }
  MESSAGE("max |ΔW − ΔW_ref| / lr over 5 steps: ", worst);
  CHECK(worst < 2e-6);
  // The gain and bias were not decayed: a decayed reference would differ by lr·wd·|W| ≫ 1e-5·lr.
  const auto names = opt.state();
  REQUIRE(names.size() == 8);
  CHECK(names[0].name == "w/exp_avg");
  CHECK(names[7].name == "bias/exp_avg_sq");
  CHECK(opt.state_bytes() == 2 * 4 * (240 + 128 + 20 + 20));
}

TEST_CASE("adamw: decay only on tensors of two or more dimensions") {
  size_t flat = 0;
  const auto layout = make_layout({{"w", {4, 4}, sb::ParamKind::matrix},
                                   {"emb", {4, 4}, sb::ParamKind::embedding},
                                   {"gain", {4}, sb::ParamKind::norm},
                                   {"bias", {4}, sb::ParamKind::bias}},
                                  &flat);
  auto be = sb::make_cpu_backend();
  sb::AdamWOptions o;
  o.lr = 0.5;
  o.weight_decay = 1.0;  // decay factor 1 − 0.5 = 0.5, exact
  sb::AdamW opt(layout, *be, o);
  std::vector<float> w(flat, 1.0f), g(flat, 0.0f);  // zero gradient: only the decay moves W
  opt.step(w.data(), g.data(), sb::StepContext{});
  CHECK(w[layout[0].offset] == 0.5f);
  CHECK(w[layout[1].offset] == 0.5f);
  CHECK(w[layout[2].offset] == 1.0f);
  CHECK(w[layout[3].offset] == 1.0f);
}

TEST_CASE("adamw: constants and integer powers") {
  CHECK(sb::pow_int(0.5, 0) == 1.0);
  CHECK(sb::pow_int(0.5, 10) == 0x1p-10);
  CHECK(sb::pow_int(3.0, 13) == 1594323.0);
  CHECK(sb::pow_int(0.95, 100) == doctest::Approx(std::pow(0.95, 100)).epsilon(1e-14));
  sb::AdamWOptions o;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  const auto k = sb::adamw_constants(o, 0.5, 3, true);
  CHECK(k.beta1 == 0.9f);
  CHECK(k.one_minus_beta1 == static_cast<float>(1.0 - 0.9));
  CHECK(k.step_size == static_cast<float>(5e-4 / (1.0 - 0.9 * 0.9 * 0.9)));
  CHECK(k.bc2_sqrt == static_cast<float>(std::sqrt(1.0 - 0.95 * 0.95 * 0.95)));
  CHECK(k.decay == static_cast<float>(1.0 - 5e-4 * 0.1));
  CHECK(sb::adamw_constants(o, 0.5, 3, false).decay == 1.0f);
  CHECK_THROWS(sb::adamw_constants(o, 1.0, 0, true));
}
