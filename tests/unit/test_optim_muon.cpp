// Muon: one and several steps against an fp64 reference of Keller Jordan's algorithm (tolerance),
// coefficient tables and scale rules, statistics, and the bitwise claims — the same bits on 1..4
// OpenMP threads, for an owned-all instance and two instances owning halves, and after a state()
// round trip (memcmp).
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"
#include "test_optim_support.hpp"

namespace {

using sb::test::make_layout;
using sb::test::random_flat;

struct Fixture {
  std::vector<sb::ParamView> layout;
  size_t flat = 0;
  Fixture() {
    layout = make_layout({{"wide", {24, 40}, sb::ParamKind::matrix},
                          {"tall", {48, 16}, sb::ParamKind::matrix},
                          {"square", {20, 20}, sb::ParamKind::matrix},
                          {"gain", {40}, sb::ParamKind::norm},
                          {"bias", {40}, sb::ParamKind::bias},
                          {"emb", {10, 8}, sb::ParamKind::embedding}},
                         &flat);
  }
};

// fp64 Muon on one matrix: returns W after one step; m is the momentum, updated.
std::vector<double> ref_muon_step(const std::vector<double>& w, const std::vector<double>& g, std::vector<double>& m,
                                  int rows, int cols, const sb::MuonOptions& o, double mu, double lr_factor) {
  std::vector<double> u(w.size());
  const bool lerp = o.momentum_form == sb::MomentumForm::lerp;
  for (size_t i = 0; i < w.size(); ++i) {
    m[i] = lerp ? m[i] + (1.0 - mu) * (g[i] - m[i]) : mu * m[i] + g[i];
    u[i] = !o.nesterov ? m[i] : lerp ? g[i] + mu * (m[i] - g[i]) : g[i] + mu * m[i];
  }
  const std::vector<double> x = sb::test::newton_schulz64(u, rows, cols, o.ns, o.ns_eps);
  const double lr = o.lr * lr_factor;
  const double scale = sb::muon_scale(o.scale, rows, cols);
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] * (1.0 - lr * o.weight_decay) - lr * scale * x[i];
  return out;
}

std::vector<double> slice64(const std::vector<float>& flat, const sb::ParamView& p) {
  return std::vector<double>(flat.begin() + p.offset, flat.begin() + p.offset + p.numel);
}

// Runs `steps` Muon steps on the fixture and the fp64 reference; returns the worst relative error
// of the matrices' total update W_T − W_0 (max norm).
double muon_vs_reference(const sb::MuonOptions& o, int steps) {
  Fixture f;
  auto be = sb::make_cpu_backend();
  sb::Muon opt(f.layout, *be, sb::Precision::fp32, o);
  std::vector<float> w = random_flat(f.layout, f.flat, 1, 0.1f);
  const std::vector<float> w0 = w;
  std::vector<std::vector<double>> w64, m64;
  for (const auto& p : f.layout) {
    w64.push_back(slice64(w, p));
    m64.push_back(std::vector<double>(p.numel, 0.0));
  }
  for (int s = 1; s <= steps; ++s) {
    const std::vector<float> g = random_flat(f.layout, f.flat, 100 + s, 1.0f);
    sb::StepContext ctx;
    ctx.step = s;
    ctx.lr_factor = 0.5 + 0.25 * s;
    ctx.muon_momentum = 0.9;
    opt.step(w.data(), g.data(), ctx);
    for (size_t t = 0; t < f.layout.size(); ++t) {
      const auto& p = f.layout[t];
      if (p.kind != sb::ParamKind::matrix) continue;
      w64[t] = ref_muon_step(w64[t], slice64(g, p), m64[t], static_cast<int>(p.shape[0]), static_cast<int>(p.shape[1]),
                             o, 0.9, ctx.lr_factor);
    }
  }
  return sb::test::worst_matrix_update_error(f.layout, w, w0, w64);
}

sb::MuonOptions base_options() {
  sb::MuonOptions o;
  o.lr = 0.5;
  return o;
}

}  // namespace

TEST_CASE("muon: one step equals the fp64 reference (keller, nesterov, shape scale)") {
  const double err = muon_vs_reference(base_options(), 1);
  MESSAGE("relative error of the update: ", err);
  CHECK(err < 1e-5);
}

TEST_CASE("muon: variants equal the fp64 reference over three steps") {
  sb::MuonOptions o = base_options();
  SUBCASE("no nesterov") { o.nesterov = false; }
  SUBCASE("lerp momentum (torch.optim.Muon's form)") { o.momentum_form = sb::MomentumForm::lerp; }
  SUBCASE("lerp momentum, no nesterov") {
    o.momentum_form = sb::MomentumForm::lerp;
    o.nesterov = false;
  }
  SUBCASE("weight decay") { o.weight_decay = 0.1; }
  SUBCASE("polar express, 7 steps") {
    sb::OptimConfig c;
    c.ns_coefficients = sb::NsCoefficients::polar_express;
    c.ns_steps = 7;
    o.ns = sb::ns_schedule(c);
  }
  SUBCASE("custom per-step triples") { o.ns = {{3.0, -3.2, 1.2}, {2.0, -1.5, 0.5}, {1.875, -1.25, 0.375}}; }
  SUBCASE("moonlight scale") { o.scale = sb::MuonScale::moonlight; }
  SUBCASE("spectral scale") { o.scale = sb::MuonScale::spectral; }
  SUBCASE("no scale") { o.scale = sb::MuonScale::none; }
  const double err = muon_vs_reference(o, 3);
  MESSAGE("relative error of the update: ", err);
  CHECK(err < 1e-5);
}

TEST_CASE("muon: a wrong coefficient is caught by the reference") {
  // Guards the comparison itself: a perturbed table must fail the tolerance used above.
  sb::MuonOptions o = base_options();
  Fixture f;
  auto be = sb::make_cpu_backend();
  const auto& p = f.layout[0];
  std::vector<float> u = random_flat(f.layout, f.flat, 7, 1.0f);
  std::vector<float> x(p.numel);
  sb::NewtonSchulz ns(*be, sb::Precision::fp32);
  ns.run(u.data(), x.data(), 24, 40, o.ns, o.ns_eps);
  std::vector<sb::NsStep> wrong = o.ns;
  wrong[4].a += 1e-3;
  const auto ref = sb::test::newton_schulz64(slice64(u, p), 24, 40, wrong, o.ns_eps);
  CHECK(sb::test::rel_error(std::vector<double>(x.begin(), x.end()), ref) > 1e-4);
  const auto good = sb::test::newton_schulz64(slice64(u, p), 24, 40, o.ns, o.ns_eps);
  CHECK(sb::test::rel_error(std::vector<double>(x.begin(), x.end()), good) < 1e-5);
}

TEST_CASE("muon: Newton–Schulz of a tall matrix is the transpose of that of its transpose, bitwise") {
  // A tall matrix iterates on Y = Xᵀ through the GEMMs' transposition flags; its wide transpose
  // iterates on X itself. Both must be the same chains: every output bit and the ortho error.
  auto be = sb::make_cpu_backend();
  const sb::MuonOptions o;
  for (const sb::Precision prec : {sb::Precision::fp32, sb::Precision::bf16}) {
    for (const auto& [rows, cols] : {std::pair{48, 16}, std::pair{97, 41}, std::pair{384, 128}}) {
      CAPTURE(rows);
      CAPTURE(cols);
      const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
      std::vector<float> u(n), ut(n), x(n), xt(n);
      uint32_t state = 2024u + static_cast<uint32_t>(rows);
      for (float& v : u) v = static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) ut[size_t(j) * rows + i] = u[size_t(i) * cols + j];
      float e_tall = 0.0f, e_wide = 0.0f;
      sb::NewtonSchulz ns(*be, prec);
      ns.run(u.data(), x.data(), rows, cols, o.ns, o.ns_eps, &e_tall);
      ns.run(ut.data(), xt.data(), cols, rows, o.ns, o.ns_eps, &e_wide);
      size_t differ = 0;
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
          differ += std::memcmp(&x[size_t(i) * cols + j], &xt[size_t(j) * rows + i], sizeof(float)) != 0;
      CHECK(differ == 0);
      CHECK(std::memcmp(&e_tall, &e_wide, sizeof(float)) == 0);
      CHECK(e_tall < 0.5f);  // it did orthogonalise
    }
  }
}

TEST_CASE("muon: bf16 Newton–Schulz stays near the fp32 result") {
  Fixture f;
  auto be = sb::make_cpu_backend();
  const std::vector<float> u = random_flat(f.layout, f.flat, 9, 1.0f);
  std::vector<float> x32(960), x16(960);
  const sb::MuonOptions o;
  sb::NewtonSchulz(*be, sb::Precision::fp32).run(u.data(), x32.data(), 24, 40, o.ns, o.ns_eps);
  sb::NewtonSchulz(*be, sb::Precision::bf16).run(u.data(), x16.data(), 24, 40, o.ns, o.ns_eps);
  const double err =
      sb::test::rel_error(std::vector<double>(x16.begin(), x16.end()), std::vector<double>(x32.begin(), x32.end()));
  MESSAGE("bf16 vs fp32 Newton–Schulz: ", err);
  CHECK(err > 0.0);   // bf16 operands do change the bits
  CHECK(err < 0.05);  // but not the orthogonalisation
}

TEST_CASE("muon: the non-matrix tensors take AdamW with adam_lr") {
  Fixture f;
  auto be = sb::make_cpu_backend();
  sb::MuonOptions o = base_options();
  o.adam.lr = 0.01;
  sb::Muon opt(f.layout, *be, sb::Precision::fp32, o);
  std::vector<float> w = random_flat(f.layout, f.flat, 3, 0.1f);
  const std::vector<float> w0 = w;
  const std::vector<float> g = random_flat(f.layout, f.flat, 4, 1.0f);
  opt.step(w.data(), g.data(), sb::StepContext{});
  for (const auto& p : f.layout) {
    if (p.kind == sb::ParamKind::matrix) continue;
    // First AdamW step: m̂/√v̂ = sign(g), so ΔW = −lr·sign(g)·|g|/(|g| + ε).
    for (size_t i = 0; i < p.numel; ++i) {
      const double gi = g[p.offset + i];
      const double expect = -0.01 * gi / (std::fabs(gi) + 1e-8);
      CHECK(std::fabs((static_cast<double>(w[p.offset + i]) - w0[p.offset + i]) - expect) < 1e-8);
    }
  }
  std::vector<std::string> names;
  for (const auto& b : opt.state()) names.push_back(b.name);
  CHECK(names == std::vector<std::string>{"wide/momentum", "tall/momentum", "square/momentum", "gain/exp_avg",
                                          "gain/exp_avg_sq", "bias/exp_avg", "bias/exp_avg_sq", "emb/exp_avg",
                                          "emb/exp_avg_sq"});
}

TEST_CASE("muon: statistics against fp64 recomputation") {
  Fixture f;
  auto be = sb::make_cpu_backend();
  sb::Muon opt(f.layout, *be, sb::Precision::fp32, base_options());
  std::vector<float> w = random_flat(f.layout, f.flat, 5, 0.1f);
  const std::vector<float> w0 = w;
  const std::vector<float> g = random_flat(f.layout, f.flat, 6, 1.0f);
  opt.step(w.data(), g.data(), sb::StepContext{});
  const auto& stats = opt.last_stats();
  REQUIRE(stats.size() == f.layout.size());
  for (size_t t = 0; t < f.layout.size(); ++t) {
    const auto& p = f.layout[t];
    double dsq = 0.0, wsq = 0.0;
    for (size_t i = 0; i < p.numel; ++i) {
      const double d = static_cast<double>(w[p.offset + i]) - w0[p.offset + i];
      dsq += d * d;
      wsq += static_cast<double>(w0[p.offset + i]) * w0[p.offset + i];
    }
    CHECK(stats[t].update_rms == doctest::Approx(std::sqrt(dsq / p.numel)).epsilon(1e-6));
    CHECK(stats[t].update_weight_ratio == doctest::Approx(std::sqrt(dsq / wsq)).epsilon(1e-6));
    if (p.kind != sb::ParamKind::matrix) {
      CHECK(std::isnan(stats[t].ortho_error));
      continue;
    }
    // The Newton–Schulz output is −ΔW/(lr·scale) (no weight decay); its orthogonality error.
    const int rows = static_cast<int>(p.shape[0]), cols = static_cast<int>(p.shape[1]);
    const double step = 0.5 * sb::muon_scale(sb::MuonScale::shape, rows, cols);
    std::vector<double> x(p.numel);
    for (size_t i = 0; i < p.numel; ++i) x[i] = -(static_cast<double>(w[p.offset + i]) - w0[p.offset + i]) / step;
    const double e = sb::test::ortho_error64(x, rows, cols);
    MESSAGE(p.name, ": ortho error ", stats[t].ortho_error, " (fp64 from ΔW: ", e, ")");
    CHECK(stats[t].ortho_error == doctest::Approx(e).epsilon(1e-3));
    CHECK(stats[t].ortho_error > 0.0f);
    CHECK(stats[t].ortho_error < 0.6f);  // Keller: σ in about [0.68, 1.13], so σ² − 1 in [−0.54, 0.28]
  }
  sb::StepContext quiet;
  quiet.compute_stats = false;
  opt.step(w.data(), g.data(), quiet);
  for (const auto& s : opt.last_stats()) CHECK(std::isnan(s.update_rms));
}

TEST_CASE("muon: scale rules and coefficient tables") {
  CHECK(sb::muon_scale(sb::MuonScale::shape, 512, 128) == 2.0);
  CHECK(sb::muon_scale(sb::MuonScale::shape, 128, 512) == 1.0);
  CHECK(sb::muon_scale(sb::MuonScale::moonlight, 128, 512) == doctest::Approx(0.2 * std::sqrt(512.0)));
  CHECK(sb::muon_scale(sb::MuonScale::spectral, 128, 512) == 0.5);
  CHECK(sb::muon_scale(sb::MuonScale::spectral, 512, 128) == 2.0);
  CHECK(sb::muon_scale(sb::MuonScale::none, 512, 128) == 1.0);
  sb::OptimConfig c;
  c.ns_steps = 3;
  auto k = sb::ns_schedule(c);
  REQUIRE(k.size() == 3);
  CHECK(k[2].a == 3.4445);
  CHECK(k[2].b == -4.7750);
  CHECK(k[2].c == 2.0315);
  c.ns_coefficients = sb::NsCoefficients::polar_express;
  c.ns_steps = 10;
  k = sb::ns_schedule(c);
  REQUIRE(k.size() == 10);
  CHECK(k[0].a == doctest::Approx(8.28721201814563 / 1.01));
  CHECK(k[0].b == doctest::Approx(-23.595886519098837 / (1.01 * 1.01 * 1.01)));
  CHECK(k[0].c == doctest::Approx(17.300387312530933 / std::pow(1.01, 5)));
  CHECK(k[9].a == 1.875);  // beyond the table: the last triple repeats
  CHECK(k[9].b == -1.25);
  CHECK(k[9].c == 0.375);
  c.ns_coefficients = sb::NsCoefficients::custom;
  c.ns_custom = {1.0, 2.0};
  CHECK_THROWS_AS(sb::ns_schedule(c), sb::Error);
}

namespace {

// Muon on a GPT layout (with one odd-sized matrix added): weights and state after two steps.
struct RunResult {
  std::vector<float> weights, state;
};

std::vector<sb::ParamView> invariance_layout(size_t* flat) {
  sb::GPTConfig cfg;
  cfg.n_layer = 1;
  cfg.n_embd = 64;
  cfg.n_head = 4;
  cfg.vocab = 64;
  cfg.seq_len = 32;
  std::vector<sb::ParamView> l = sb::gpt_param_layout(cfg);
  size_t end = 0;
  for (const auto& p : l) end = std::max(end, p.offset + p.numel);
  end = (end + sb::kParamAlign - 1) / sb::kParamAlign * sb::kParamAlign;
  l.push_back({"odd", {150, 100}, end, 15000, sb::ParamKind::matrix, 0.0f, 0.0f});
  *flat = end + 15008;
  return l;
}

void step_twice(std::vector<sb::Optimizer*> opts, std::vector<float>& w, const std::vector<sb::ParamView>& l,
                size_t flat) {
  for (int s = 1; s <= 2; ++s) {
    const std::vector<float> g = random_flat(l, flat, 40 + s, 1.0f);
    sb::StepContext ctx;
    ctx.step = s;
    for (sb::Optimizer* o : opts) o->step(w.data(), g.data(), ctx);
  }
}

std::vector<float> state_values(const std::vector<sb::StateBuffer>& buffers) {
  std::vector<float> v;
  for (const auto& b : buffers) v.insert(v.end(), b.data, b.data + b.numel);
  return v;
}

RunResult run_threads(int threads, const sb::OptimConfig& config) {
  size_t flat = 0;
  const auto l = invariance_layout(&flat);
  omp_set_num_threads(threads);
  auto be = sb::make_cpu_backend();
  auto opt = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  std::vector<float> w = random_flat(l, flat, 2, 0.05f);
  step_twice({opt.get()}, w, l, flat);
  return {w, state_values(opt->state())};
}

}  // namespace

TEST_CASE("muon and adamw: the same bits on 1, 2, 3 and 4 threads") {
  const int saved = omp_get_max_threads();
  for (sb::OptimizerName name : {sb::OptimizerName::muon, sb::OptimizerName::adamw}) {
    sb::OptimConfig config;
    config.name = name;
    config.weight_decay = 0.1;
    const RunResult one = run_threads(1, config);
    for (int t = 2; t <= 4; ++t) {
      const RunResult r = run_threads(t, config);
      CHECK(sb::test::same_bits(r.weights, one.weights, "weights"));
      CHECK(sb::test::same_bits(r.state, one.state, "state"));
    }
  }
  omp_set_num_threads(saved);
}

// Matrices on threads (muon.cpp): whole matrices per thread, in any order — the weights, the
// state and every update statistic (ortho error included) keep their bits for 1..4 threads, for
// the variants whose update differs per matrix (split_qkv, cautious wd, normuon, unit_rms).
TEST_CASE("muon: matrices on threads keep the bits of weights, state and statistics") {
  const int saved = omp_get_max_threads();
  auto stats_bits = [](const std::vector<sb::TensorUpdateStats>& s) {
    std::vector<float> v;
    for (const auto& t : s) v.insert(v.end(), {t.update_rms, t.update_weight_ratio, t.ortho_error});
    return v;
  };
  auto run = [&](int threads, const sb::OptimConfig& config) {
    size_t flat = 0;
    const auto l = invariance_layout(&flat);
    omp_set_num_threads(threads);
    auto be = sb::make_cpu_backend();
    auto opt = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
    std::vector<float> w = random_flat(l, flat, 2, 0.05f);
    for (int s = 1; s <= 2; ++s) {
      const std::vector<float> g = random_flat(l, flat, 40 + s, 1.0f);
      sb::StepContext ctx;
      ctx.step = s;
      ctx.compute_stats = true;
      opt->step(w.data(), g.data(), ctx);
    }
    RunResult r{w, state_values(opt->state())};
    return std::pair{r, stats_bits(opt->last_stats())};
  };
  for (int variant = 0; variant < 4; ++variant) {
    CAPTURE(variant);
    sb::OptimConfig config;
    config.weight_decay = 0.1;
    if (variant == 1) config.split_qkv = config.cautious_wd = true;
    if (variant == 2) config.name = sb::OptimizerName::normuon;
    if (variant == 3) config.scale = sb::MuonScale::unit_rms;
    const auto [one, one_stats] = run(1, config);
    for (int t = 2; t <= 4; ++t) {
      CAPTURE(t);
      const auto [r, stats] = run(t, config);
      CHECK(sb::test::same_bits(r.weights, one.weights, "weights"));
      CHECK(sb::test::same_bits(r.state, one.state, "state"));
      CHECK(sb::test::same_bits(stats, one_stats, "update statistics"));
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("muon: two instances owning halves give the bits of one owning all") {
  size_t flat = 0;
  const auto l = invariance_layout(&flat);
  auto be = sb::make_cpu_backend();
  sb::OptimConfig config;
  config.weight_decay = 0.1;
  auto all = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  auto first = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  auto second = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  std::vector<bool> half(l.size());
  for (size_t i = 0; i < l.size(); ++i) half[i] = i % 2 == 0;
  first->set_owned(half);
  half.flip();
  second->set_owned(half);
  CHECK(first->state_bytes() + second->state_bytes() == all->state_bytes());
  std::vector<float> w_all = random_flat(l, flat, 2, 0.05f), w_split = w_all;
  step_twice({all.get()}, w_all, l, flat);
  step_twice({first.get(), second.get()}, w_split, l, flat);
  CHECK(sb::test::same_bits(w_split, w_all, "weights"));
  // Unowned tensors are untouched and report NaN statistics.
  std::vector<float> w_one = random_flat(l, flat, 2, 0.05f);
  const std::vector<float> w_before = w_one;
  sb::StepContext ctx;
  first->step(w_one.data(), random_flat(l, flat, 41, 1.0f).data(), ctx);
  for (size_t i = 0; i < l.size(); ++i) {
    if (i % 2 == 0) continue;
    CHECK(sb::test::same_bits(w_one.data() + l[i].offset, w_before.data() + l[i].offset, l[i].numel, "unowned"));
    CHECK(std::isnan(first->last_stats()[i].update_rms));
  }
}

TEST_CASE("muon: state() round trip continues with identical bits") {
  size_t flat = 0;
  const auto l = invariance_layout(&flat);
  auto be = sb::make_cpu_backend();
  sb::OptimConfig config;
  auto a = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  std::vector<float> w = random_flat(l, flat, 2, 0.05f);
  step_twice({a.get()}, w, l, flat);
  auto b = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  const auto sa = a->state(), sbuf = b->state();
  REQUIRE(sa.size() == sbuf.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    REQUIRE(sa[i].name == sbuf[i].name);
    std::memcpy(sbuf[i].data, sa[i].data, sa[i].numel * sizeof(float));
  }
  std::vector<float> w2 = w;
  const std::vector<float> g = random_flat(l, flat, 77, 1.0f);
  sb::StepContext ctx;
  ctx.step = 3;
  a->step(w.data(), g.data(), ctx);
  b->step(w2.data(), g.data(), ctx);
  CHECK(sb::test::same_bits(w2, w, "weights after resume"));
  CHECK(sb::test::same_bits(state_values(b->state()), state_values(a->state()), "state after resume"));
}

TEST_CASE("make_optimizer: one word switches; Muon holds one buffer per matrix, AdamW two") {
  sb::GPTConfig cfg;  // the default model
  const auto l = sb::gpt_param_layout(cfg);
  auto be = sb::make_cpu_backend();
  sb::OptimConfig config;
  auto muon = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  config.name = sb::OptimizerName::adamw;
  auto adamw = sb::make_optimizer(config, l, *be, sb::Precision::fp32);
  size_t matrix = 0, other = 0;
  for (const auto& p : l) (p.kind == sb::ParamKind::matrix ? matrix : other) += p.numel;
  CHECK(muon->state_bytes() == 4 * (matrix + 2 * other));
  CHECK(adamw->state_bytes() == 4 * 2 * (matrix + other));
  const auto cost = muon->update_cost();
  for (size_t i = 0; i < l.size(); ++i) {
    if (l[i].kind == sb::ParamKind::matrix) CHECK(cost[i] == sb::newton_schulz_flops(l[i].shape[0], l[i].shape[1], 5));
    else CHECK(cost[i] == static_cast<double>(l[i].numel));
  }
  CHECK(dynamic_cast<sb::AdamW*>(adamw.get())->options().lr == config.lr);
}
