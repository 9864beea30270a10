// The GPT model (core/model/gpt.cpp) on the CPU backend: parameter layout and GPT-2 init, loss and
// every parameter gradient against an fp64 reference GPT written here (finite differences of its
// loss), for both norm kinds, tied and untied heads, with and without biases; the batch gradient's
// exact-accumulation scheme.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/philox.hpp"
#include "test_op_support.hpp"

using namespace sb;

namespace {

// ---- an fp64 GPT, as plainly as possible -------------------------------------------------------
using Vec = std::vector<double>;

struct RefGPT {
  const GPTConfig& cfg;
  int B;
  const std::vector<ParamView>& layout;
  const Vec& w;  // flat parameters
  const double* p(const std::string& name) const {
    for (const ParamView& v : layout)
      if (v.name == name) return w.data() + v.offset;
    return nullptr;
  }
  Vec norm(const Vec& x, const double* g, const double* b, int N, int C) const {
    Vec y(x.size());
    for (int n = 0; n < N; ++n) {
      double m = 0, v = 0;
      if (cfg.norm == NormKind::layernorm) {
        for (int c = 0; c < C; ++c) m += x[n * C + c];
        m /= C;
      }
      for (int c = 0; c < C; ++c) v += (x[n * C + c] - m) * (x[n * C + c] - m);
      const double r = 1 / std::sqrt(v / C + 1e-5);
      for (int c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) * r * g[c] + (b ? b[c] : 0.0);
    }
    return y;
  }
  Vec linear(const Vec& x, const double* W, const double* b, int N, int C, int OC) const {
    Vec y(static_cast<size_t>(N) * OC);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) {
        double s = b ? b[o] : 0.0;
        for (int c = 0; c < C; ++c) s += x[n * C + c] * W[o * C + c];
        y[n * OC + o] = s;
      }
    return y;
  }
  // qkv rows of W = (NH + 2G)·hs: NH query heads, G key heads, G value heads; query head h
  // attends with key/value head h mod G.
  Vec attention(const Vec& qkv, int T, int C, int NH, int G) const {
    const int hs = C / NH, W = (NH + 2 * G) * hs;
    Vec y(static_cast<size_t>(B) * T * C, 0.0), s(T);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h) {
        const int k = (NH + h % G) * hs, v = (NH + G + h % G) * hs;
        for (int t = 0; t < T; ++t) {
          double m = -INFINITY, den = 0;
          for (int j = 0; j <= t; ++j) {
            double d = 0;
            for (int i = 0; i < hs; ++i) d += qkv[(b * T + t) * W + h * hs + i] * qkv[(b * T + j) * W + k + i];
            s[j] = d / std::sqrt(static_cast<double>(hs));
            m = std::fmax(m, s[j]);
          }
          for (int j = 0; j <= t; ++j) den += std::exp(s[j] - m);
          for (int j = 0; j <= t; ++j)
            for (int i = 0; i < hs; ++i)
              y[(b * T + t) * C + h * hs + i] += std::exp(s[j] - m) / den * qkv[(b * T + j) * W + v + i];
        }
      }
    return y;
  }
  // Rotary positions on the NH query and G key heads (rotate-half pairs (i, i + hs/2), angle
  // t·θ^(−2i/hs)) in fp64.
  void rope(Vec& qkv, int T, int hs, int heads, int W) const {
    const int half = hs / 2;
    for (int n = 0; n < B * T; ++n)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          const double a = (n % T) * std::pow(cfg.rope_theta, -2.0 * i / hs);
          double& x = qkv[size_t(n) * W + size_t(h) * hs + i];
          double& y = qkv[size_t(n) * W + size_t(h) * hs + half + i];
          const double lo = x * std::cos(a) - y * std::sin(a), hi = y * std::cos(a) + x * std::sin(a);
          x = lo, y = hi;
        }
  }
  // QK-norm: each of the NH query heads and G key heads RMS-normed with its gain.
  void qk_norm(Vec& qkv, int N, int hs, int NH, int G, const double* gq, const double* gk) const {
    const int W = (NH + 2 * G) * hs;
    for (int n = 0; n < N; ++n)
      for (int h = 0; h < NH + G; ++h) {
        double* x = qkv.data() + size_t(n) * W + size_t(h) * hs;
        double v = 0;
        for (int i = 0; i < hs; ++i) v += x[i] * x[i];
        const double r = 1 / std::sqrt(v / hs + 1e-5);
        for (int i = 0; i < hs; ++i) x[i] = x[i] * r * (h < NH ? gq : gk)[i];
      }
  }
  // An MLP (GELU or SwiGLU) of width F at `at` ("h.L.mlp." or an expert's "h.L.moe.X.") on rows m.
  Vec mlp(const std::string& at, const Vec& m, int N, int C, int F) const {
    Vec f;
    if (cfg.mlp == MlpKind::swiglu) {  // each row: the gate's F, then the up's F
      const Vec gu = linear(m, p(at + "fc.w"), p(at + "fc.b"), N, C, 2 * F);
      f.resize(size_t(N) * F);
      for (int n = 0; n < N; ++n)
        for (int j = 0; j < F; ++j) {
          const double g = gu[size_t(n) * 2 * F + j], u = gu[size_t(n) * 2 * F + F + j];
          f[size_t(n) * F + j] = g / (1 + std::exp(-g)) * u;
        }
    } else {
      f = linear(m, p(at + "fc.w"), p(at + "fc.b"), N, C, F);
      for (double& v : f) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    return linear(f, p(at + "proj.w"), p(at + "proj.b"), N, F, C);
  }
  // A Mixture-of-Experts block on rows m: shared experts on every token, the top-k routed experts
  // (fp64 scores; the larger first, ties to the lower index) with their gates, an expert keeping
  // its first `capacity` tokens by position; adds the leaf's load-balancing loss to *aux.
  Vec moe(const std::string& h, const Vec& m, int N, int C, double* aux) const {
    const int E = cfg.moe_experts, k = cfg.moe_top_k, S = cfg.moe_shared_experts, F = int(cfg.expert_ffn());
    const bool softmax = cfg.moe_router == MoeRouter::softmax;
    const Vec z = linear(m, p(h + "moe.router.w"), nullptr, N, C, E);
    Vec out(size_t(N) * C, 0.0), sums(size_t(E), 0.0);
    std::vector<int64_t> counts(size_t(E), 0), kept(size_t(E), 0);
    const int64_t capacity = cfg.moe_capacity > 0 ? int64_t(std::ceil(cfg.moe_capacity * N * k / E)) : N;
    std::vector<Vec> expert_out(static_cast<size_t>(S + E));
    for (int x = 0; x < S + E; ++x) expert_out[size_t(x)] = mlp(h + "moe." + moe_expert_name(cfg, x) + ".", m, N, C, F);
    for (int t = 0; t < N; ++t) {
      Vec sc(static_cast<size_t>(E));
      double mx = -INFINITY, den = 0;
      for (int e = 0; e < E; ++e) mx = std::fmax(mx, z[size_t(t) * E + e]);
      for (int e = 0; e < E; ++e) den += std::exp(z[size_t(t) * E + e] - mx);
      for (int e = 0; e < E; ++e)
        sc[size_t(e)] = softmax ? std::exp(z[size_t(t) * E + e] - mx) / den : 1 / (1 + std::exp(-z[size_t(t) * E + e]));
      std::vector<int> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sc[size_t(a)] > sc[size_t(b)]; });
      std::vector<int> chosen(order.begin(), order.begin() + k);
      std::sort(chosen.begin(), chosen.end());
      double total = 0;
      for (int e : chosen) total += sc[size_t(e)];
      for (int x = 0; x < S; ++x)
        for (int c = 0; c < C; ++c) out[size_t(t) * C + c] += expert_out[size_t(x)][size_t(t) * C + c];
      for (int e : chosen) {
        ++counts[size_t(e)];
        if (kept[size_t(e)]++ >= capacity) continue;
        const double g = softmax ? sc[size_t(e)] : sc[size_t(e)] / total;
        for (int c = 0; c < C; ++c) out[size_t(t) * C + c] += g * expert_out[size_t(S + e)][size_t(t) * C + c];
      }
      for (int e = 0; e < E; ++e) sums[size_t(e)] += sc[size_t(e)];
    }
    double lb = 0;
    for (int e = 0; e < E; ++e) lb += double(counts[size_t(e)]) / (N * k) * (sums[size_t(e)] / N);
    *aux += cfg.moe_aux_loss * E * lb;
    return out;
  }
  // The mean cross-entropy of the leaf; with_aux: plus its load-balancing losses (what the
  // gradient is of).
  double loss(const std::vector<int32_t>& tokens, bool with_aux = false) const {
    const int T = cfg.seq_len, C = cfg.n_embd, V = cfg.vocab, N = B * T;
    double aux = 0;
    Vec x(static_cast<size_t>(N) * C);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c)
          x[(b * T + t) * C + c] =
              p("wte")[tokens[b * (T + 1) + t] * C + c] + (cfg.pos == PosKind::learned ? p("wpe")[t * C + c] : 0.0);
    for (int l = 0; l < cfg.n_layer; ++l) {
      const std::string h = "h." + std::to_string(l) + ".";
      Vec a = norm(x, p(h + "ln1.w"), p(h + "ln1.b"), N, C);
      const int NH = cfg.n_head, G = cfg.kv_heads(), hs = C / NH, W = (NH + 2 * G) * hs;
      Vec qkv = linear(a, p(h + "attn.qkv.w"), p(h + "attn.qkv.b"), N, C, W);
      if (cfg.qk_norm) qk_norm(qkv, N, hs, NH, G, p(h + "attn.q_norm.w"), p(h + "attn.k_norm.w"));
      if (cfg.pos == PosKind::rope) rope(qkv, T, hs, NH + G, W);
      Vec y = attention(qkv, T, C, NH, G);
      Vec o = linear(y, p(h + "attn.proj.w"), p(h + "attn.proj.b"), N, C, C);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      Vec m = norm(x, p(h + "ln2.w"), p(h + "ln2.b"), N, C);
      Vec g = cfg.moe_block(l) ? moe(h, m, N, C, &aux) : mlp(h + "mlp.", m, N, C, int(cfg.ffn()));
      for (size_t i = 0; i < x.size(); ++i) x[i] += g[i];
    }
    Vec f = norm(x, p("lnf.w"), p("lnf.b"), N, C);
    Vec logits = linear(f, cfg.tied_head ? p("wte") : p("lm_head.w"), nullptr, N, C, V);
    double total = 0;
    for (int n = 0; n < N; ++n) {
      double m = -INFINITY, s = 0;
      for (int v = 0; v < V; ++v) m = std::fmax(m, logits[n * V + v]);
      for (int v = 0; v < V; ++v) s += std::exp(logits[n * V + v] - m);
      const int target = tokens[(n / T) * (T + 1) + n % T + 1];
      total += m + std::log(s) - logits[n * V + target];
    }
    return total / N + (with_aux ? aux : 0.0);
  }
};

std::vector<int32_t> leaf_tokens(int B, int T, int V, uint32_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(B) * (T + 1));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 7 + seed * 13 + i * i * seed) % V);
  return t;
}

// Weights with sizeable values everywhere (so every gradient is far from zero): gains 1 ± 0.2,
// everything else uniform in ±0.3; padding stays zero.
std::vector<float> test_weights(const GPT& model, uint32_t seed) {
  std::vector<float> w(model.flat_size(), 0.0f);
  for (const ParamView& p : model.params()) {
    const auto u = test::uniform(p.numel, seed++, -0.3f, 0.3f);
    for (size_t i = 0; i < p.numel; ++i) w[p.offset + i] = (p.kind == ParamKind::norm ? 1.0f : 0.0f) + u[i];
  }
  return w;
}

}  // namespace

TEST_CASE("parameter layout: names, shapes, aligned offsets, kinds") {
  GPTConfig cfg;
  cfg.vocab = 50, cfg.seq_len = 16, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 12;
  cfg.tied_head = false;
  const auto layout = gpt_param_layout(cfg);
  std::map<std::string, Shape> shapes;
  size_t end = 0;
  for (const ParamView& p : layout) {
    shapes[p.name] = p.shape;
    CHECK(p.offset % kParamAlign == 0);
    CHECK(p.offset >= end);
    CHECK(p.numel == static_cast<size_t>(shape_numel(p.shape)));
    end = p.offset + p.numel;
  }
  CHECK(layout.front().name == "wte");
  CHECK(shapes["wte"] == Shape{50, 12});
  CHECK(shapes["wpe"] == Shape{16, 12});
  CHECK(shapes["h.1.attn.qkv.w"] == Shape{36, 12});
  CHECK(shapes["h.1.attn.qkv.b"] == Shape{36});
  CHECK(shapes["h.0.mlp.fc.w"] == Shape{48, 12});
  CHECK(shapes["h.0.mlp.proj.w"] == Shape{12, 48});
  CHECK(shapes["h.0.ln1.b"] == Shape{12});
  CHECK(shapes["lm_head.w"] == Shape{50, 12});
  CHECK(layout.size() == 2 + 2 * 12 + 2 + 1);

  cfg.tied_head = true, cfg.bias = false;
  for (const ParamView& p : gpt_param_layout(cfg)) {
    CHECK(p.kind != ParamKind::bias);
    CHECK(p.name != "lm_head.w");
  }
  cfg.bias = true, cfg.norm = NormKind::rmsnorm;
  for (const ParamView& p : gpt_param_layout(cfg)) {
    const bool norm_bias = p.name.find("ln") != std::string::npos && p.name.back() == 'b';
    CHECK_FALSE(norm_bias);
  }

  cfg.pos = PosKind::rope;
  for (const ParamView& p : gpt_param_layout(cfg)) CHECK(p.name != "wpe");
  cfg.n_embd = 13;
  CHECK_THROWS_AS(gpt_param_layout(cfg), sb::Error);
}

TEST_CASE("GPT-2 initialisation from Philox streams named after the tensors") {
  auto be = make_cpu_backend();
  GPTConfig cfg;
  cfg.vocab = 256, cfg.seq_len = 64, cfg.n_layer = 4, cfg.n_head = 4, cfg.n_embd = 64;
  GPT model(cfg, 1, *be);
  model.init(1234);
  const float* w = model.weights().data_as<float>();
  const ParamView& wte = model.param("wte");
  for (size_t i : {size_t{0}, size_t{1}, size_t{777}})
    CHECK(w[wte.offset + i] == 0.02f * det::philox_normal(1234, det::stream_of("wte"), i));
  auto stdev = [&](const ParamView& p) {
    double s = 0, ss = 0;
    for (size_t i = 0; i < p.numel; ++i) s += w[p.offset + i], ss += w[p.offset + i] * w[p.offset + i];
    const double m = s / p.numel;
    return std::sqrt(ss / p.numel - m * m);
  };
  CHECK(stdev(model.param("h.2.mlp.fc.w")) == doctest::Approx(0.02).epsilon(0.03));
  CHECK(stdev(model.param("h.2.mlp.proj.w")) == doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.03));
  CHECK(stdev(model.param("h.0.attn.proj.w")) == doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.03));
  const ParamView& g = model.param("h.3.ln2.w");
  const ParamView& b = model.param("h.3.attn.qkv.b");
  bool ok = true;
  for (size_t i = 0; i < g.numel; ++i) ok = ok && w[g.offset + i] == 1.0f;
  for (size_t i = 0; i < b.numel; ++i) ok = ok && w[b.offset + i] == 0.0f;
  CHECK(ok);
  // Streams follow names: wpe's values are not wte's.
  CHECK(w[model.param("wpe").offset] != w[wte.offset]);
}

TEST_CASE("GPT-2 initialisation: the same bits on 1..4 threads, padding zero, over dirty weights") {
  auto be = make_cpu_backend();
  GPTConfig cfg;
  cfg.vocab = 301, cfg.seq_len = 37, cfg.n_layer = 2, cfg.n_head = 4, cfg.n_embd = 68;
  GPT model(cfg, 1, *be);
  // The reference: every element by the formula, one at a time; padding +0.
  std::vector<float> expect(model.flat_size(), 0.0f);
  for (const ParamView& p : model.params()) {
    for (size_t i = 0; i < p.numel; ++i) {
      expect[p.offset + i] =
          p.init_std == 0.0f ? p.init_value : p.init_std * det::philox_normal(77, det::stream_of(p.name), i);
    }
  }
  const int threads_before = omp_get_max_threads();
  float* w = model.weights().data_as<float>();
  for (int threads = 1; threads <= 4; ++threads) {
    INFO("threads = " << threads);
    omp_set_num_threads(threads);
    std::fill(w, w + model.flat_size(), -1.5f);  // padding included: init must rewrite it
    model.init(77);
    CHECK(std::memcmp(w, expect.data(), expect.size() * sizeof(float)) == 0);
  }
  omp_set_num_threads(threads_before);
}

TEST_CASE("GPT loss and every gradient match an fp64 reference (finite differences)") {
  struct Variant {
    NormKind norm;
    bool tied, bias;
    MlpKind mlp = MlpKind::gelu;
    PosKind pos = PosKind::learned;
    int n_head = 2, n_kv_head = 0;
    bool qk_norm = false;
    int moe = 0;  // 1: softmax router, top-2 of 4, a shared expert; 2: sigmoid, every 2nd block, capacity 1
  };
  for (Variant var : {Variant{NormKind::layernorm, true, true}, Variant{NormKind::rmsnorm, false, false},
                      Variant{NormKind::layernorm, false, false}, Variant{NormKind::rmsnorm, true, true},
                      Variant{NormKind::rmsnorm, false, false, MlpKind::swiglu},
                      Variant{NormKind::layernorm, true, true, MlpKind::swiglu},
                      Variant{NormKind::rmsnorm, false, false, MlpKind::swiglu, PosKind::rope},
                      Variant{NormKind::layernorm, true, true, MlpKind::gelu, PosKind::rope},
                      Variant{NormKind::rmsnorm, false, false, MlpKind::swiglu, PosKind::rope, 4, 2},
                      Variant{NormKind::layernorm, true, true, MlpKind::gelu, PosKind::learned, 4, 1},
                      Variant{NormKind::rmsnorm, true, false, MlpKind::swiglu, PosKind::rope, 2, 0, true},
                      Variant{NormKind::rmsnorm, false, true, MlpKind::swiglu, PosKind::rope, 4, 2, true},
                      Variant{NormKind::layernorm, true, true, MlpKind::gelu, PosKind::learned, 2, 0, false, 1},
                      Variant{NormKind::rmsnorm, false, false, MlpKind::swiglu, PosKind::rope, 2, 0, false, 2}}) {
    GPTConfig cfg;
    cfg.vocab = 11, cfg.seq_len = 5, cfg.n_layer = 2, cfg.n_head = var.n_head, cfg.n_embd = 8;
    cfg.n_kv_head = var.n_kv_head, cfg.qk_norm = var.qk_norm;
    if (var.moe > 0) {
      cfg.moe_experts = 4, cfg.moe_top_k = 2, cfg.moe_ffn_dim = 12, cfg.moe_aux_loss = 0.5;  // a sizeable aux term
      cfg.moe_shared_experts = var.moe == 1 ? 1 : 0;
      cfg.moe_router = var.moe == 1 ? MoeRouter::softmax : MoeRouter::sigmoid;
      cfg.moe_every = var.moe == 1 ? 1 : 2, cfg.moe_capacity = var.moe == 1 ? 0.0 : 1.0;
    }
    cfg.norm = var.norm, cfg.tied_head = var.tied, cfg.bias = var.bias, cfg.mlp = var.mlp, cfg.pos = var.pos;
    cfg.rope_theta = 100.0;  // angles that turn within 5 positions
    if (var.mlp == MlpKind::swiglu) cfg.ffn_dim = 24;
    const int B = 2;
    auto be = make_cpu_backend();
    GPT model(cfg, B, *be);
    const auto w = test_weights(model, 7);
    be->copy_from_host(model.weights().data(), w.data(), w.size() * sizeof(float));
    const auto tokens = leaf_tokens(B, cfg.seq_len, cfg.vocab, 3);
    const float loss = model.forward(tokens.data());
    model.backward();
    std::vector<float> grad(model.flat_size());
    be->copy_to_host(grad.data(), model.grads().data(), grad.size() * sizeof(float));

    Vec wd(w.begin(), w.end());
    RefGPT ref{cfg, B, model.params(), wd};
    const double ref_loss = ref.loss(tokens);
    CAPTURE(static_cast<int>(var.norm));
    CAPTURE(var.tied);
    CAPTURE(var.bias);
    CAPTURE(static_cast<int>(var.mlp));
    CAPTURE(static_cast<int>(var.pos));
    CAPTURE(var.n_head);
    CAPTURE(var.n_kv_head);
    CAPTURE(var.qk_norm);
    CHECK(std::fabs(loss - ref_loss) / ref_loss < 1e-5);
    double worst = 0;
    int idle_experts = 0;
    for (const ParamView& p : model.params()) {
      std::vector<double> slice(wd.begin() + p.offset, wd.begin() + p.offset + p.numel);
      auto numeric = test::fd_gradient(slice, [&] {
        std::copy(slice.begin(), slice.end(), wd.begin() + p.offset);
        return ref.loss(tokens, true);
      });
      std::copy(slice.begin(), slice.end(), wd.begin() + p.offset);
      std::vector<float> analytic(grad.begin() + p.offset, grad.begin() + p.offset + p.numel);
      if (std::all_of(numeric.begin(), numeric.end(), [](double v) { return v == 0.0; })) {
        // An expert the leaf's tokens never reached: its gradient is exactly zero.
        CAPTURE(p.name);
        CHECK(var.moe > 0);
        CHECK(std::all_of(analytic.begin(), analytic.end(), [](float v) { return v == 0.0f; }));
        ++idle_experts;
        continue;
      }
      worst = std::fmax(worst, test::check_gradient(analytic, numeric, 1e-4, p.name.c_str(), true));
    }
    MESSAGE("norm=", std::string(var.norm == NormKind::layernorm ? "layernorm" : "rmsnorm"),
            " mlp=", std::string(var.mlp == MlpKind::swiglu ? "swiglu" : "gelu"),
            std::string(var.pos == PosKind::rope ? " rope" : ""), " heads=", var.n_head, "/", cfg.kv_heads(),
            std::string(var.qk_norm ? " qk_norm" : ""), std::string(var.moe == 1 ? " moe softmax+shared" : ""),
            std::string(var.moe == 2 ? " moe sigmoid capacity 1" : ""), " tied=", var.tied, " bias=", var.bias,
            ": loss relative error ", std::fabs(loss - ref_loss) / ref_loss, ", ", idle_experts,
            " tensors of experts without tokens (zero gradients)",
            ", max gradient relative error vs fp64 finite differences ", worst);
    bool padding_zero = true;
    size_t end = 0;
    for (const ParamView& p : model.params()) {
      for (size_t i = end; i < p.offset; ++i) padding_zero = padding_zero && grad[i] == 0.0f;
      end = p.offset + p.numel;
    }
    CHECK(padding_zero);
  }
}

TEST_CASE("batch gradient: the exact leaf sum rounded once, divided by the leaf count") {
  auto be = make_cpu_backend();
  GPTConfig cfg;
  cfg.vocab = 32, cfg.seq_len = 8, cfg.n_layer = 1, cfg.n_head = 2, cfg.n_embd = 16;
  GPT model(cfg, 2, *be);
  model.init(5);
  std::vector<std::vector<int32_t>> data;
  for (uint32_t l = 0; l < 3; ++l) data.push_back(leaf_tokens(2, cfg.seq_len, cfg.vocab, l + 1));
  std::vector<const int32_t*> leaves;
  for (auto& d : data) leaves.push_back(d.data());

  // By hand: each leaf's gradient into a det::FixedAccumulator, rounded, divided by 3.
  det::FixedAccumulator acc_ref(model.flat_size());
  det::ExactSum losses;
  std::vector<float> leaf_losses;
  for (const int32_t* leaf : leaves) {
    leaf_losses.push_back(model.forward(leaf));
    model.backward();
    acc_ref.add(model.grads().data_as<float>());
    losses.merge(model.loss_sum());
  }
  std::vector<float> want(model.flat_size());
  acc_ref.round_to_fp32(want.data());
  for (float& x : want) x = x / 3.0f;

  auto acc = be->make_accumulator(model.flat_size());
  std::vector<float> got(model.flat_size());
  size_t seen = 0;
  const float loss = batch_gradient(model, leaves, *acc, got.data(), [&](size_t i, float l, const float*) {
    CHECK(i == seen++);
    CHECK(l == leaf_losses[i]);
  });
  CHECK(seen == 3);
  CHECK(test::same_bits(got, want, "batch gradient"));
  CHECK(loss == static_cast<float>(losses.to_f64() / (3.0 * 16.0)));
  CHECK(loss == doctest::Approx((leaf_losses[0] + leaf_losses[1] + leaf_losses[2]) / 3.0).epsilon(1e-6));
}

TEST_CASE("forward rejects tokens outside the vocabulary") {
  auto be = make_cpu_backend();
  GPTConfig cfg;
  cfg.vocab = 8, cfg.seq_len = 4, cfg.n_layer = 1, cfg.n_head = 1, cfg.n_embd = 4;
  GPT model(cfg, 1, *be);
  std::vector<int32_t> tokens = {1, 2, 3, 9, 0};
  CHECK_THROWS_AS(model.forward(tokens.data()), sb::Error);
}

TEST_CASE("vendor numerics (OpenBLAS, native reductions) compute the same mathematics") {
  GPTConfig cfg;
  cfg.vocab = 40, cfg.seq_len = 12, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16;
  for (NormKind norm : {NormKind::layernorm, NormKind::rmsnorm}) {
    cfg.norm = norm;
    auto be_c = make_cpu_backend();
    auto be_v = make_cpu_backend(Numerics::vendor());
    GPT mc(cfg, 2, *be_c), mv(cfg, 2, *be_v);
    mc.init(9);
    mv.init(9);
    const auto tokens = leaf_tokens(2, cfg.seq_len, cfg.vocab, 5);
    const float lc = mc.forward(tokens.data());
    const float lv = mv.forward(tokens.data());
    mc.backward();
    mv.backward();
    CHECK(lv == doctest::Approx(lc).epsilon(1e-6));
    const float* gc = mc.grads().data_as<float>();
    const float* gv = mv.grads().data_as<float>();
    for (const ParamView& p : mc.params()) {
      double diff = 0, ref = 0;
      for (size_t i = 0; i < p.numel; ++i) {
        diff += (gv[p.offset + i] - gc[p.offset + i]) * double(gv[p.offset + i] - gc[p.offset + i]);
        ref += gc[p.offset + i] * double(gc[p.offset + i]);
      }
      CAPTURE(p.name);
      CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(ref));
    }
  }
}
