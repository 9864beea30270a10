// optim_oracle_export OUT.h5: one Muon step and one AdamW step through samebits' optimizers (CPU
// backend) on seeded weights, gradients and optimizer state, written to HDF5 for optim_oracle.py,
// which recomputes them in PyTorch float64 (Keller Jordan's Muon, torch.optim.AdamW). Layout
// (oracle_h5.hpp's writer):
//   /muon/<case>   attrs rows cols lr weight_decay momentum nesterov ns_eps scale precision table
//                  split_qkv cautious_wd normuon normuon_beta2 (the variants, docs/OPTIM.md §1.1)
//                  f32 (rows, cols): W G M0 (before), W_new M_new (after), X (the step's
//                  Newton–Schulz output, per (C, C) block under split_qkv); f64 (steps, 3): ns;
//                  attr ortho_error (samebits' statistic); NorMuon: f32 (rows) v0, v_new
//   /adamw/<case>  attrs lr weight_decay beta1 beta2 eps step decay; f32 (shape): W G m0 v0 W_new m_new v_new
//   /ns/<case>     attrs table eps; f32 (rows, cols): U and X = NS(U); f64 (steps, 3): ns
//   /qk_clip/<case> attrs n_head tau clipped; f32 qkv (B, T, 3C), max_logits (n_head),
//                  W W_new (3C, C), b b_new (3C): QK-clip of one block (optim/qk_clip.hpp)
#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "oracle_h5.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/muon.hpp"
#include "samebits/core/optim/adamw.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/optim/qk_clip.hpp"
#include "samebits/det/error.hpp"

namespace {

using namespace sb;
using namespace sb::oracle;

struct MuonCase {
  const char* name;
  int rows, cols;
  NsCoefficients table;
  int ns_steps;
  MuonScale scale;
  bool nesterov;
  double weight_decay;
  Precision precision;
  // The variants (docs/OPTIM.md §1.1).
  double extra_scale = 1.0;
  bool split_qkv = false;
  bool cautious_wd = false;
  bool normuon = false;
};

void muon_case(hid_t file, const MuonCase& c, uint32_t seed) {
  OptimConfig config;
  config.lr = 0.02;
  config.weight_decay = c.weight_decay;
  config.nesterov = c.nesterov;
  config.ns_steps = c.ns_steps;
  config.ns_coefficients = c.table;
  config.scale = c.scale;
  config.extra_scale = c.extra_scale;
  config.split_qkv = c.split_qkv;
  config.cautious_wd = c.cautious_wd;
  if (c.normuon) config.name = OptimizerName::normuon;
  const MuonOptions o = muon_options(config);
  const size_t n = static_cast<size_t>(c.rows) * c.cols;
  const std::vector<ParamView> layout = {
      {c.split_qkv ? "h.0.attn.qkv.w" : "w", {c.rows, c.cols}, 0, n, ParamKind::matrix, 0, 0}};
  auto be = make_cpu_backend();
  Muon opt(layout, *be, c.precision, o);
  const std::vector<float> w0 = normal(n, seed, 0.02f), g = normal(n, seed + 1, 1e-3f), m0 = normal(n, seed + 2, 1e-3f);
  StateBuffer momentum = opt.state().at(0);
  std::memcpy(momentum.data, m0.data(), n * sizeof(float));
  // NorMuon: a second moment from earlier steps, positive, near the rows' mean squares (1/cols).
  std::vector<float> v0;
  if (c.normuon) {
    v0 = normal(static_cast<size_t>(c.rows), seed + 3, 1.0f);
    for (float& v : v0) v = (0.5f + v * v) / static_cast<float>(c.cols);
    std::memcpy(opt.state().at(1).data, v0.data(), v0.size() * sizeof(float));
  }
  std::vector<float> w = w0;
  StepContext ctx;
  ctx.muon_momentum = 0.95;
  opt.step(w.data(), g.data(), ctx);
  const std::vector<float> m_new(momentum.data, momentum.data + n);
  // The step's Newton–Schulz output, from its input U computed with the same formulas (per
  // (C, C) block of rows under split_qkv).
  std::vector<float> u(n), x(n);
  for (size_t i = 0; i < n; ++i) u[i] = ops::muon_input(g[i], m_new[i], 0.95f, c.nesterov);
  const int blocks = c.split_qkv ? 3 : 1, block_rows = c.rows / blocks;
  const size_t block = static_cast<size_t>(block_rows) * c.cols;
  for (int b = 0; b < blocks; ++b) {
    NewtonSchulz(*be, c.precision).run(u.data() + b * block, x.data() + b * block, block_rows, c.cols, o.ns, o.ns_eps);
  }

  const Group grp(file, std::string("muon/") + c.name);
  const std::vector<hsize_t> dims = {static_cast<hsize_t>(c.rows), static_cast<hsize_t>(c.cols)};
  grp.attr("rows", c.rows);
  grp.attr("cols", c.cols);
  grp.attr("lr", o.lr);
  grp.attr("weight_decay", o.weight_decay);
  grp.attr("momentum", 0.95);
  grp.attr("nesterov", c.nesterov ? 1.0 : 0.0);
  grp.attr("ns_eps", o.ns_eps);
  grp.attr("scale", muon_scale(o.scale, block_rows, c.cols) * o.extra_scale);
  grp.attr("split_qkv", c.split_qkv ? 1.0 : 0.0);
  grp.attr("cautious_wd", c.cautious_wd ? 1.0 : 0.0);
  grp.attr("normuon", c.normuon ? 1.0 : 0.0);
  grp.attr("normuon_beta2", o.normuon_beta2);
  if (c.normuon) {
    const float* v = opt.state().at(1).data;
    grp.data("v0", v0, {v0.size()});
    grp.data("v_new", std::vector<float>(v, v + c.rows), {v0.size()});
  }
  grp.attr("scale_rule", std::string(config_name(c.scale)));
  grp.attr("table", std::string(config_name(c.table)));
  grp.attr("precision", std::string(to_string(c.precision)));
  grp.attr("ortho_error", static_cast<double>(opt.last_stats().at(0).ortho_error));
  grp.data("W", w0, dims);
  grp.data("G", g, dims);
  grp.data("M0", m0, dims);
  grp.data("W_new", w, dims);
  grp.data("M_new", m_new, dims);
  grp.data("X", x, dims);
  grp.data("ns", ns_table(o.ns), {o.ns.size(), 3});
}

struct AdamWCase {
  const char* name;
  Shape shape;
  ParamKind kind;
  int64_t step;  // the update's number (1-based); state from step − 1 earlier updates
};

void adamw_case(hid_t file, const AdamWCase& c, uint32_t seed) {
  AdamWOptions o;
  o.lr = 3e-3;
  o.weight_decay = 0.1;
  o.betas = {0.9, 0.95};
  o.eps = 1e-8;
  const size_t n = static_cast<size_t>(shape_numel(c.shape));
  const std::vector<ParamView> layout = {{"p", c.shape, 0, n, c.kind, 0, 0}};
  auto be = make_cpu_backend();
  AdamW opt(layout, *be, o);
  const std::vector<float> w0 = normal(n, seed, 0.02f), g = normal(n, seed + 1, 1e-2f);
  std::vector<float> m0(n, 0.0f), v0(n, 0.0f);
  if (c.step > 1) {
    m0 = normal(n, seed + 2, 1e-2f);
    v0 = normal(n, seed + 3, 1e-2f);
    for (float& v : v0) v = v * v;
  }
  const std::vector<StateBuffer> st = opt.state();
  std::memcpy(st.at(0).data, m0.data(), n * sizeof(float));
  std::memcpy(st.at(1).data, v0.data(), n * sizeof(float));
  std::vector<float> w = w0;
  StepContext ctx;
  ctx.step = c.step;
  opt.step(w.data(), g.data(), ctx);

  const Group grp(file, std::string("adamw/") + c.name);
  std::vector<hsize_t> dims(c.shape.begin(), c.shape.end());
  grp.attr("lr", o.lr);
  grp.attr("weight_decay", o.weight_decay);
  grp.attr("beta1", o.betas[0]);
  grp.attr("beta2", o.betas[1]);
  grp.attr("eps", o.eps);
  grp.attr("step", static_cast<double>(c.step));
  grp.attr("decay", decays_weight(layout[0]) ? 1.0 : 0.0);
  grp.data("W", w0, dims);
  grp.data("G", g, dims);
  grp.data("m0", m0, dims);
  grp.data("v0", v0, dims);
  grp.data("W_new", w, dims);
  grp.data("m_new", std::vector<float>(st[0].data, st[0].data + n), dims);
  grp.data("v_new", std::vector<float>(st[1].data, st[1].data + n), dims);
}

void ns_case(hid_t file, const char* name, NsCoefficients table, int rows, int cols, uint32_t seed) {
  OptimConfig config;
  config.ns_coefficients = table;
  const std::vector<NsStep> steps = ns_schedule(config);
  const size_t n = static_cast<size_t>(rows) * cols;
  const std::vector<float> u = normal(n, seed, 1.0f);
  std::vector<float> x(n);
  auto be = make_cpu_backend();
  NewtonSchulz(*be, Precision::fp32).run(u.data(), x.data(), rows, cols, steps, config.ns_eps);
  const Group grp(file, std::string("ns/") + name);
  const std::vector<hsize_t> dims = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)};
  grp.attr("table", std::string(config_name(table)));
  grp.attr("eps", config.ns_eps);
  grp.data("U", u, dims);
  grp.data("X", x, dims);
  grp.data("ns", ns_table(steps), {steps.size(), 3});
}

// QK-clip: a block's q | k | v activations of two sequences and its qkv.w, qkv.b; the per-head
// max logits samebits finds and the weights after the clip at τ (between the heads' maxima, so
// some heads are clipped and some are not).
void qk_clip_case(hid_t file, const char* name, int B, int T, int C, int NH, uint32_t seed) {
  GPTConfig model;
  model.n_layer = 1;
  model.n_head = NH;
  model.n_embd = C;
  model.seq_len = T;
  model.bias = true;
  const std::vector<ParamView> layout = gpt_param_layout(model);
  const ParamView* w = nullptr;
  const ParamView* b = nullptr;
  size_t flat = 0;
  for (const ParamView& p : layout) {
    if (p.name == "h.0.attn.qkv.w") w = &p;
    if (p.name == "h.0.attn.qkv.b") b = &p;
    flat = std::max(flat, p.offset + p.numel);
  }
  SB_CHECK(w != nullptr && b != nullptr, "qk_clip_case: no qkv tensors");
  std::vector<float> qkv = normal(static_cast<size_t>(B) * T * 3 * C, seed, 1.0f);
  for (int h = 0; h < NH; ++h)  // heads of growing logit range
    for (size_t i = 0; i < qkv.size(); ++i)
      if ((i % (3 * C)) / (C / NH) % NH == static_cast<size_t>(h)) qkv[i] *= 1.0f + h;
  auto be = make_cpu_backend();  // host memory: the qkv and weights below are plain vectors
  QkMaxLogits maxima(*be, 1, NH);
  maxima.add(0, qkv.data(), B, T, C);
  const std::vector<float> s = QkMaxLogits::values(maxima.keys());
  std::vector<float> sorted = s;
  std::sort(sorted.begin(), sorted.end());
  const double tau = 0.5 * (static_cast<double>(sorted[NH / 2 - 1]) + sorted[NH / 2]);
  std::vector<float> weights = normal(flat, seed + 1, 0.02f);
  const std::vector<float> w0(weights.begin() + w->offset, weights.begin() + w->offset + w->numel);
  const std::vector<float> b0(weights.begin() + b->offset, weights.begin() + b->offset + b->numel);
  const int clipped = apply_qk_clip(*be, weights.data(), layout, model, s, tau);
  const Group grp(file, std::string("qk_clip/") + name);
  grp.attr("n_head", NH);
  grp.attr("tau", tau);
  grp.attr("clipped", clipped);
  grp.data("qkv", qkv, {static_cast<hsize_t>(B), static_cast<hsize_t>(T), static_cast<hsize_t>(3 * C)});
  grp.data("max_logits", s, {static_cast<hsize_t>(NH)});
  const std::vector<hsize_t> wdims = {static_cast<hsize_t>(3 * C), static_cast<hsize_t>(C)};
  grp.data("W", w0, wdims);
  grp.data("b", b0, {static_cast<hsize_t>(3 * C)});
  grp.data("W_new", std::vector<float>(weights.begin() + w->offset, weights.begin() + w->offset + w->numel), wdims);
  grp.data("b_new", std::vector<float>(weights.begin() + b->offset, weights.begin() + b->offset + b->numel),
           {static_cast<hsize_t>(3 * C)});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: optim_oracle_export OUT.h5\n");
    return 2;
  }
  try {
    const hid_t file =
        checked(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), std::string("create ") + argv[1]);
    // The default model's matrices (n_embd 128): qkv (384, 128), attn.proj (128, 128),
    // mlp.fc (512, 128), mlp.proj (128, 512).
    const MuonCase muon[] = {
        {"qkv_keller", 384, 128, NsCoefficients::keller, 5, MuonScale::shape, true, 0.1, Precision::fp32},
        {"proj_polar_express", 128, 128, NsCoefficients::polar_express, 8, MuonScale::spectral, false, 0.0,
         Precision::fp32},
        {"fc_keller_moonlight", 512, 128, NsCoefficients::keller, 5, MuonScale::moonlight, true, 0.0, Precision::fp32},
        {"mlp_proj_polar_express", 128, 512, NsCoefficients::polar_express, 5, MuonScale::shape, true, 0.1,
         Precision::fp32},
        {"qkv_keller_bf16", 384, 128, NsCoefficients::keller, 5, MuonScale::shape, true, 0.1, Precision::bf16},
        // The variants: Emerging-Optimizers' tables and scale modes, split Q/K/V, cautious
        // weight decay, NorMuon (alone and with the others).
        {"proj_polar_express_8", 128, 128, NsCoefficients::polar_express_8, 8, MuonScale::unit_rms, true, 0.0,
         Precision::fp32},
        {"fc_polar_express_5_max_dim", 512, 128, NsCoefficients::polar_express_5, 5, MuonScale::max_dim, true, 0.1,
         Precision::fp32, 0.2},
        {"mlp_proj_quintic", 128, 512, NsCoefficients::quintic, 5, MuonScale::shape, true, 0.0, Precision::fp32, 1.5},
        {"qkv_split", 384, 128, NsCoefficients::keller, 5, MuonScale::shape, true, 0.1, Precision::fp32, 1.0, true},
        {"fc_cautious_wd", 512, 128, NsCoefficients::keller, 5, MuonScale::shape, true, 0.5, Precision::fp32, 1.0,
         false, true},
        {"proj_normuon", 128, 128, NsCoefficients::keller, 5, MuonScale::shape, true, 0.0, Precision::fp32, 1.0, false,
         false, true},
        {"mlp_proj_normuon", 128, 512, NsCoefficients::polar_express, 5, MuonScale::moonlight, false, 0.1,
         Precision::fp32, 1.0, false, false, true},
        {"qkv_normuon_split_cautious", 384, 128, NsCoefficients::polar_express_5, 5, MuonScale::shape, true, 0.5,
         Precision::fp32, 1.0, true, true, true},
    };
    uint32_t seed = 1000;
    for (const MuonCase& c : muon) muon_case(file, c, seed += 10);
    const AdamWCase adamw[] = {
        {"wte_step3", {256, 128}, ParamKind::embedding, 3},
        {"ln_gain_step1", {128}, ParamKind::norm, 1},
        {"qkv_bias_step10", {384}, ParamKind::bias, 10},
    };
    for (const AdamWCase& c : adamw) adamw_case(file, c, seed += 10);
    ns_case(file, "keller_128x384", NsCoefficients::keller, 128, 384, seed += 10);
    ns_case(file, "polar_express_128x384", NsCoefficients::polar_express, 128, 384, seed += 10);
    qk_clip_case(file, "c64_h4_t32", 2, 32, 64, 4, seed += 10);
    qk_clip_case(file, "c128_h8_t16", 3, 16, 128, 8, seed += 10);
    H5Fclose(file);
    std::printf("%s: %zu Muon, %zu AdamW, 2 Newton–Schulz cases\n", argv[1], std::size(muon), std::size(adamw));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "optim_oracle_export: %s\n", e.what());
    return 1;
  }
  return 0;
}
