// The Muon variants (docs/OPTIM.md §1.1) against an fp64 reference written from their papers over
// three steps (tolerance): NorMuon's per-row second moment (arXiv:2510.05491, modded-nanogpt's
// norm-keeping rule), Q/K/V blocks orthogonalised separately (Megatron-Core), cautious weight
// decay (modded-nanogpt), extra_scale; the tables and scale modes of Emerging-Optimizers, the
// aliases' equalities bitwise (memcmp), and the refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"
#include "test_optim_support.hpp"

namespace {

using sb::test::make_layout;
using sb::test::random_flat;

std::vector<sb::ParamView> layout(size_t* flat) {
  return make_layout({{"h.0.attn.qkv.w", {48, 16}, sb::ParamKind::matrix},
                      {"wide", {24, 40}, sb::ParamKind::matrix},
                      {"tall", {40, 12}, sb::ParamKind::matrix},
                      {"gain", {16}, sb::ParamKind::norm}},
                     flat);
}

// One fp64 step of the variant on one matrix; m (momentum) and v (NorMuon's, rows) updated.
std::vector<double> ref_step(const std::vector<double>& w, const std::vector<double>& g, std::vector<double>& m,
                             std::vector<double>& v, const sb::ParamView& p, const sb::MuonOptions& o, double mu,
                             double lr) {
  const int rows = static_cast<int>(p.shape[0]), cols = static_cast<int>(p.shape[1]);
  const size_t n = w.size();
  std::vector<double> u(n);
  for (size_t i = 0; i < n; ++i) {
    m[i] = mu * m[i] + g[i];
    u[i] = o.nesterov ? g[i] + mu * m[i] : m[i];
  }
  const int blocks = o.split_qkv && sb::is_fused_qkv(p) ? 3 : 1;
  const int br = rows / blocks;
  const size_t bn = static_cast<size_t>(br) * cols;
  std::vector<double> x;
  for (int b = 0; b < blocks; ++b) {
    const std::vector<double> part(u.begin() + b * bn, u.begin() + (b + 1) * bn);
    const std::vector<double> xb = sb::test::newton_schulz64(part, br, cols, o.ns, o.ns_eps);
    x.insert(x.end(), xb.begin(), xb.end());
  }
  if (o.normuon) {  // v ← β2·v + (1 − β2)·mean_j X_ij²; rows ÷ √v; ‖X‖_F kept
    double old_sq = 0.0, new_sq = 0.0;
    std::vector<double> r(rows);
    for (int i = 0; i < rows; ++i) {
      double s = 0.0;
      for (int j = 0; j < cols; ++j) s += x[i * cols + j] * x[i * cols + j];
      v[i] = o.normuon_beta2 * v[i] + (1.0 - o.normuon_beta2) * s / cols;
      r[i] = 1.0 / std::sqrt(std::max(v[i], 1e-10));
      old_sq += s;
      new_sq += r[i] * r[i] * s;
    }
    const double keep = std::sqrt(old_sq / new_sq);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) x[i * cols + j] *= r[i] * keep;
  }
  const double step = lr * sb::muon_scale(o.scale, br, cols) * o.extra_scale;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const bool decays = !o.cautious_wd || w[i] * x[i] > 0.0;
    out[i] = w[i] - (decays ? lr * o.weight_decay * w[i] : 0.0) - step * x[i];
  }
  return out;
}

// Three steps of samebits and of the reference; the worst relative error of W_T − W_0.
double vs_reference(const sb::MuonOptions& o) {
  size_t flat = 0;
  const auto l = layout(&flat);
  auto be = sb::make_cpu_backend();
  sb::Muon opt(l, *be, sb::Precision::fp32, o);
  std::vector<float> w = random_flat(l, flat, 3, 0.1f);
  const std::vector<float> w0 = w;
  std::vector<std::vector<double>> w64, m64, v64;
  for (const auto& p : l) {
    w64.emplace_back(w.begin() + p.offset, w.begin() + p.offset + p.numel);
    m64.emplace_back(p.numel, 0.0);
    v64.emplace_back(p.shape[0], 0.0);
  }
  for (int s = 1; s <= 3; ++s) {
    const std::vector<float> g = random_flat(l, flat, 200 + s, 1.0f);
    sb::StepContext ctx;
    ctx.step = s;
    ctx.lr_factor = 0.5 + 0.25 * s;
    ctx.muon_momentum = 0.9;
    opt.step(w.data(), g.data(), ctx);
    for (size_t t = 0; t < l.size(); ++t) {
      if (l[t].kind != sb::ParamKind::matrix) continue;
      const std::vector<double> gt(g.begin() + l[t].offset, g.begin() + l[t].offset + l[t].numel);
      w64[t] = ref_step(w64[t], gt, m64[t], v64[t], l[t], o, 0.9, o.lr * ctx.lr_factor);
    }
  }
  return sb::test::worst_matrix_update_error(l, w, w0, w64);
}

sb::MuonOptions base() {
  sb::MuonOptions o;
  o.lr = 0.5;
  o.weight_decay = 0.2;
  return o;
}

std::vector<float> weights_after_step(const sb::MuonOptions& o) {
  size_t flat = 0;
  const auto l = layout(&flat);
  auto be = sb::make_cpu_backend();
  sb::Muon opt(l, *be, sb::Precision::fp32, o);
  std::vector<float> w = random_flat(l, flat, 5, 0.1f);
  opt.step(w.data(), random_flat(l, flat, 6, 1.0f).data(), sb::StepContext{});
  return w;
}

}  // namespace

TEST_CASE("muon variants equal the fp64 reference over three steps") {
  sb::MuonOptions o = base();
  SUBCASE("normuon") { o.normuon = true; }
  SUBCASE("normuon, no nesterov, moonlight scale") {
    o.normuon = true;
    o.nesterov = false;
    o.scale = sb::MuonScale::moonlight;
  }
  SUBCASE("split_qkv") { o.split_qkv = true; }
  SUBCASE("cautious weight decay") { o.cautious_wd = true; }
  SUBCASE("unit_rms with extra_scale") {
    o.scale = sb::MuonScale::unit_rms;
    o.extra_scale = 0.3;
  }
  SUBCASE("max_dim, polar_express_8") {
    o.scale = sb::MuonScale::max_dim;
    sb::OptimConfig c;
    c.ns_coefficients = sb::NsCoefficients::polar_express_8;
    c.ns_steps = 9;
    o.ns = sb::ns_schedule(c);
  }
  SUBCASE("everything at once") {
    o.normuon = true;
    o.split_qkv = true;
    o.cautious_wd = true;
    o.extra_scale = 0.5;
  }
  const double err = vs_reference(o);
  MESSAGE("relative error of the update: ", err);
  CHECK(err < 1e-5);
}

TEST_CASE("muon variants: the reference can tell them apart") {
  // Guards the comparison: samebits with a variant on vs the reference with it off must fail.
  sb::MuonOptions on = base();
  on.normuon = true;
  on.split_qkv = true;
  on.cautious_wd = true;
  const std::vector<float> a = weights_after_step(on), b = weights_after_step(base());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0);
  for (void (*change)(sb::MuonOptions&) :
       {+[](sb::MuonOptions& o) { o.normuon = true; }, +[](sb::MuonOptions& o) { o.split_qkv = true; },
        +[](sb::MuonOptions& o) { o.cautious_wd = true; }}) {
    sb::MuonOptions o = base();
    change(o);
    const std::vector<float> got = weights_after_step(o);
    CHECK(std::memcmp(got.data(), b.data(), b.size() * sizeof(float)) != 0);
  }
}

TEST_CASE("scale modes and aliases: the same bits where the formulas agree") {
  CHECK(sb::muon_scale(sb::MuonScale::unit_rms, 128, 512) == 0.5);
  CHECK(sb::muon_scale(sb::MuonScale::unit_rms, 512, 128) == 2.0);
  CHECK(sb::muon_scale(sb::MuonScale::max_dim, 128, 512) == std::sqrt(512.0));
  sb::MuonOptions moonlight = base(), max_dim = base(), spectral = base(), unit_rms = base();
  moonlight.scale = sb::MuonScale::moonlight;
  max_dim.scale = sb::MuonScale::max_dim;
  max_dim.extra_scale = 0.2;  // Emerging-Optimizers' spectral mode with 0.2 is Moonlight's rule
  spectral.scale = sb::MuonScale::spectral;
  unit_rms.scale = sb::MuonScale::unit_rms;
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  CHECK(same(weights_after_step(moonlight), weights_after_step(max_dim)));
  CHECK(same(weights_after_step(spectral), weights_after_step(unit_rms)));
  sb::MuonOptions plain = base(), times_one = base();
  times_one.extra_scale = 1.0;
  CHECK(same(weights_after_step(plain), weights_after_step(times_one)));
  sb::MuonOptions doubled = base();
  doubled.extra_scale = 2.0;
  CHECK_FALSE(same(weights_after_step(plain), weights_after_step(doubled)));
}

TEST_CASE("Emerging-Optimizers' and modded-nanogpt's tables") {
  sb::OptimConfig c;
  c.ns_coefficients = sb::NsCoefficients::polar_express_8;
  c.ns_steps = 8;
  auto k = sb::ns_schedule(c);
  REQUIRE(k.size() == 8);
  CHECK(k[0].a == 8.2051);  // the paper's table rounded to 4 decimals
  CHECK(k[0].b == -22.9019);
  CHECK(k[7].c == 0.375);
  c.ns_steps = 5;
  CHECK_THROWS_AS(sb::ns_schedule(c), sb::Error);  // Emerging-Optimizers needs ≥ 8 steps
  c.ns_coefficients = sb::NsCoefficients::polar_express_5;
  k = sb::ns_schedule(c);
  REQUIRE(k.size() == 5);
  CHECK(k[4].a == 2.3465413258596377);
  c.ns_coefficients = sb::NsCoefficients::quintic;
  c.ns_steps = 10;
  k = sb::ns_schedule(c);
  REQUIRE(k.size() == 10);
  CHECK(k[5].a == k[0].a);  // cycled
  CHECK(k[0].a == 4.0848);
  c.ns_steps = 7;
  CHECK_THROWS_AS(sb::ns_schedule(c), sb::Error);
}

TEST_CASE("split_qkv applies to attn.qkv.w of shape (3C, C) only") {
  CHECK(sb::is_fused_qkv({"h.3.attn.qkv.w", {96, 32}, 0, 3072, sb::ParamKind::matrix, 0, 0}));
  CHECK_FALSE(sb::is_fused_qkv({"h.3.attn.proj.w", {96, 32}, 0, 3072, sb::ParamKind::matrix, 0, 0}));
  CHECK_FALSE(sb::is_fused_qkv({"h.3.attn.qkv.w", {64, 32}, 0, 2048, sb::ParamKind::matrix, 0, 0}));
  CHECK_FALSE(sb::is_fused_qkv({"h.3.attn.qkv.b", {96}, 0, 96, sb::ParamKind::bias, 0, 0}));
}

TEST_CASE("cautious weight decay: the mask is strict agreement of signs") {
  CHECK(sb::ops::cautious_decays(1.0f, 2.0f));
  CHECK(sb::ops::cautious_decays(-1.0f, -2.0f));
  CHECK_FALSE(sb::ops::cautious_decays(1.0f, -2.0f));
  CHECK_FALSE(sb::ops::cautious_decays(0.0f, 2.0f));
  CHECK_FALSE(sb::ops::cautious_decays(-0.0f, -2.0f));
  CHECK_FALSE(sb::ops::cautious_decays(1.0f, std::nanf("")));
  CHECK(sb::ops::muon_apply_cautious(1.0f, -0.5f, 0.5f, 0.25f) == 1.125f);  // no decay
  CHECK(sb::ops::muon_apply_cautious(1.0f, 0.5f, 0.5f, 0.25f) == 0.375f);   // decayed
}

TEST_CASE("the variants' keys enter the experiment only when set") {
  sb::Config c;
  const std::string plain = sb::experiment_text(c);
  for (const char* key : {"extra_scale", "split_qkv", "cautious_wd", "normuon_beta2"})
    CHECK(plain.find(key) == std::string::npos);
  sb::Config n = c;
  n.optim.name = sb::OptimizerName::normuon;
  CHECK(sb::experiment_text(n).find("normuon_beta2 = 0.95") != std::string::npos);
  sb::Config s = c;
  s.optim.split_qkv = true;
  CHECK(sb::experiment_id(s) != sb::experiment_id(c));
  sb::Config bad = c;
  bad.optim.ns_coefficients = sb::NsCoefficients::polar_express_8;  // ns_steps = 5 < 8
  CHECK_THROWS_AS(sb::validate(bad), sb::Error);
  bad = c;
  bad.optim.extra_scale = 0.0;
  CHECK_THROWS_AS(sb::validate(bad), sb::Error);
  bad = c;
  bad.optim.normuon_beta2 = 1.0;
  CHECK_THROWS_AS(sb::validate(bad), sb::Error);
}
