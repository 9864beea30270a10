// op_cases.hpp: the Backend's ops (backend.hpp), one case each, on small odd shapes (k crossing
// the canonical GEMM's k-blocks, widths that are not multiples of 32) so that thread partitions,
// SIMD tails and vendor orders are all exercised.
#include <limits>

#include "invariance/op_cases.hpp"
#include "samebits/core/ops/rope.hpp"

namespace sb::invariance {
namespace {

OpOutput gemm_case(Backend& be) {
  Buffers buf(be);
  const int m = 37, n = 53, k = 600;  // k spans three of the canonical kernel's k-blocks
  const std::vector<float> a = uniform(size_t(m) * k, 1), b = uniform(size_t(k) * n, 2), c0 = uniform(size_t(m) * n, 3);
  const float* da = buf.upload(a);
  const float* db = buf.upload(b);
  std::vector<Region> cs;
  for (Trans ta : {Trans::no, Trans::yes})
    for (Trans tb : {Trans::no, Trans::yes}) {
      float* c = buf.upload(c0);
      be.gemm(
          {ta, tb, m, n, k, da, ta == Trans::no ? k : m, db, tb == Trans::no ? n : k, c, n, false, Precision::fp32});
      cs.push_back({c, c0.size()});
    }
  float* c = buf.upload(c0);  // the chain continued from C, and bf16 operands
  be.gemm({Trans::no, Trans::no, m, n, k, da, k, db, n, c, n, true, Precision::bf16});
  return buf.values({cs[0], cs[1], cs[2], cs[3], {c, c0.size()}});
}

OpOutput syrk_case(Backend& be) {
  Buffers buf(be);
  const int n = 40, k = 300;
  const float* a = buf.upload(uniform(size_t(n) * k, 4));
  float *c = buf.zeros(size_t(n) * n), *ct = buf.zeros(size_t(n) * n);
  be.syrk(sb::ops::syrk_problem(Trans::no, n, k, a, k, c, n, Precision::fp32));
  be.syrk(sb::ops::syrk_problem(Trans::yes, n, k, a, n, ct, n, Precision::fp32));
  return buf.values({{c, size_t(n) * n}, {ct, size_t(n) * n}});
}

OpOutput bias_forward_case(Backend& be) {
  Buffers buf(be);
  const int N = 64, OC = 48;
  float* o = buf.upload(uniform(size_t(N) * OC, 5));
  be.bias_forward(o, buf.upload(uniform(OC, 6)), N, OC);
  return buf.values({{o, size_t(N) * OC}});
}

OpOutput bias_backward_case(Backend& be) {
  Buffers buf(be);
  const int N = 300, OC = 48;
  float* db = buf.zeros(OC);
  be.bias_backward(db, buf.upload(uniform(size_t(N) * OC, 7)), N, OC);
  return buf.values({{db, OC}});
}

OpOutput layernorm_forward_case(Backend& be) {
  Buffers buf(be);
  const int N = 64, C = 100;
  float *o = buf.zeros(size_t(N) * C), *mean = buf.zeros(N), *rstd = buf.zeros(N);
  be.layernorm_forward(o, mean, rstd, buf.upload(uniform(size_t(N) * C, 8, -2, 3)), buf.upload(uniform(C, 9)),
                       buf.upload(uniform(C, 10)), N, C);
  return buf.values({{o, size_t(N) * C}, {mean, N}, {rstd, N}});
}

OpOutput layernorm_backward_case(Backend& be) {
  Buffers buf(be);
  const int N = 64, C = 100;
  float *di = buf.zeros(size_t(N) * C), *dw = buf.zeros(C), *db = buf.zeros(C);
  be.layernorm_backward(di, dw, db, buf.upload(uniform(size_t(N) * C, 11)), buf.upload(uniform(size_t(N) * C, 12)),
                        buf.upload(uniform(C, 13)), buf.upload(uniform(N, 14, -0.1f, 0.1f)),
                        buf.upload(uniform(N, 15, 0.5f, 2.0f)), N, C);
  return buf.values({{di, size_t(N) * C}, {dw, C}, {db, C}});
}

OpOutput rmsnorm_forward_case(Backend& be) {
  Buffers buf(be);
  const int N = 64, C = 100;
  float *o = buf.zeros(size_t(N) * C), *rstd = buf.zeros(N);
  be.rmsnorm_forward(o, rstd, buf.upload(uniform(size_t(N) * C, 16, -2, 3)), buf.upload(uniform(C, 17)), N, C);
  return buf.values({{o, size_t(N) * C}, {rstd, N}});
}

OpOutput rmsnorm_backward_case(Backend& be) {
  Buffers buf(be);
  const int N = 64, C = 100;
  float *di = buf.zeros(size_t(N) * C), *dw = buf.zeros(C);
  be.rmsnorm_backward(di, dw, buf.upload(uniform(size_t(N) * C, 18)), buf.upload(uniform(size_t(N) * C, 19)),
                      buf.upload(uniform(C, 20)), buf.upload(uniform(N, 21, 0.5f, 2.0f)), N, C);
  return buf.values({{di, size_t(N) * C}, {dw, C}});
}

constexpr int kB = 2, kT = 24, kC = 48, kNH = 4;

// Softmax-like probabilities: positive below the diagonal, 0 above it.  (B, NH, T, T)
std::vector<float> causal_probabilities() {
  std::vector<float> att = uniform(size_t(kB) * kNH * kT * kT, 22, 0.0f, 0.2f);
  for (size_t row = 0; row < att.size() / kT; ++row)
    for (int t2 = 0; t2 < kT; ++t2)
      if (t2 > int(row % kT)) att[row * kT + size_t(t2)] = 0.0f;
  return att;
}

OpOutput attention_forward_case(Backend& be) {
  Buffers buf(be);
  float *o = buf.zeros(size_t(kB) * kT * kC), *att = buf.zeros(size_t(kB) * kNH * kT * kT);
  be.attention_forward(o, att, buf.upload(uniform(size_t(kB) * kT * 3 * kC, 23, -2, 2)), kB, kT, kC, kNH);
  return buf.values({{o, size_t(kB) * kT * kC}, {att, size_t(kB) * kNH * kT * kT}});
}

OpOutput attention_backward_case(Backend& be) {
  Buffers buf(be);
  float *dqkv = buf.zeros(size_t(kB) * kT * 3 * kC), *datt = buf.zeros(size_t(kB) * kNH * kT * kT);
  be.attention_backward(dqkv, datt, buf.upload(uniform(size_t(kB) * kT * kC, 24)),
                        buf.upload(uniform(size_t(kB) * kT * 3 * kC, 25, -2, 2)), buf.upload(causal_probabilities()),
                        kB, kT, kC, kNH);
  return buf.values({{dqkv, size_t(kB) * kT * 3 * kC}});
}

OpOutput qk_max_keys_case(Backend& be) {
  Buffers buf(be);
  int32_t* keys = buf.upload(std::vector<int32_t>(kNH, std::numeric_limits<int32_t>::min()));
  be.qk_max_keys(keys, buf.upload(uniform(size_t(kB) * kT * 3 * kC, 26, -3, 3)), kB, kT, kC, kNH);
  OpOutput out;
  for (int32_t k : buf.download(keys, kNH)) out.words.push_back(static_cast<uint32_t>(k));
  return out;
}

OpOutput qk_clip_scale_case(Backend& be) {
  Buffers buf(be);
  float* x = buf.upload(uniform(1000, 27));
  be.qk_clip_scale(x, 1000, 0.7f);
  return buf.values({{x, 1000}});
}

constexpr int64_t kPointwise = 4099;  // not a multiple of any SIMD width

OpOutput gelu_forward_case(Backend& be) {
  Buffers buf(be);
  float* o = buf.zeros(kPointwise);
  be.gelu_forward(o, buf.upload(uniform(kPointwise, 28, -6, 6)), kPointwise);
  return buf.values({{o, kPointwise}});
}

OpOutput gelu_backward_case(Backend& be) {
  Buffers buf(be);
  float* d = buf.zeros(kPointwise);
  be.gelu_backward(d, buf.upload(uniform(kPointwise, 29, -6, 6)), buf.upload(uniform(kPointwise, 30)), kPointwise);
  return buf.values({{d, kPointwise}});
}

// SwiGLU over 37 rows of F = 111 (each row the gate's F values, then the up's F).
constexpr int64_t kGluRows = 37, kGluF = 111;

OpOutput swiglu_forward_case(Backend& be) {
  Buffers buf(be);
  float* o = buf.zeros(kGluRows * kGluF);
  be.swiglu_forward(o, buf.upload(uniform(2 * kGluRows * kGluF, 41, -8, 8)), kGluRows, kGluF);
  return buf.values({{o, kGluRows * kGluF}});
}

OpOutput swiglu_backward_case(Backend& be) {
  Buffers buf(be);
  float* d = buf.zeros(2 * kGluRows * kGluF);
  be.swiglu_backward(d, buf.upload(uniform(2 * kGluRows * kGluF, 42, -8, 8)), buf.upload(uniform(kGluRows * kGluF, 43)),
                     kGluRows, kGluF);
  return buf.values({{d, 2 * kGluRows * kGluF}});
}

// Rotary positions on B 2, T 24, C 48, 4 heads (head size 12), θ = 10000.
OpOutput rope_case(Backend& be, bool backward) {
  constexpr int B = 2, T = 24, C = 48, NH = 4, hd = C / NH;
  std::vector<float> table(size_t(T) * hd);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < hd / 2; ++i) {
      table[size_t(t) * hd + 2 * size_t(i)] = ops::rope_cos(t, i, hd, 10000.0f);
      table[size_t(t) * hd + 2 * size_t(i) + 1] = ops::rope_sin(t, i, hd, 10000.0f);
    }
  Buffers buf(be);
  const int64_t n = int64_t(B) * T * 3 * C;
  float* x = buf.upload(uniform(n, backward ? 45 : 44, -2, 2));
  if (backward) be.rope_backward(x, buf.upload(table), B, T, C, NH);
  else be.rope_forward(x, buf.upload(table), B, T, C, NH);
  return buf.values({{x, n}});
}
OpOutput rope_forward_case(Backend& be) { return rope_case(be, false); }
OpOutput rope_backward_case(Backend& be) { return rope_case(be, true); }

// Grouped-query heads over 48 tokens: 6 query heads sharing 2 key/value heads of 12 values.
constexpr int kHeadRows = 48, kQHeads = 6, kKvHeads = 2, kHeadDim = 12;
constexpr int64_t kQkvWidth = int64_t{kQHeads + 2 * kKvHeads} * kHeadDim, kMhaWidth = 3 * int64_t{kQHeads} * kHeadDim;

OpOutput kv_repeat_forward_case(Backend& be) {
  Buffers buf(be);
  float* o = buf.zeros(kHeadRows * kMhaWidth);
  be.kv_repeat_forward(o, buf.upload(uniform(kHeadRows * kQkvWidth, 46)), kHeadRows, kQHeads, kKvHeads, kHeadDim);
  return buf.values({{o, kHeadRows * kMhaWidth}});
}

OpOutput kv_repeat_backward_case(Backend& be) {
  Buffers buf(be);
  float* d = buf.zeros(kHeadRows * kQkvWidth);
  be.kv_repeat_backward(d, buf.upload(uniform(kHeadRows * kMhaWidth, 47)), kHeadRows, kQHeads, kKvHeads, kHeadDim);
  return buf.values({{d, kHeadRows * kQkvWidth}});
}

OpOutput qk_norm_forward_case(Backend& be) {
  Buffers buf(be);
  float *o = buf.zeros(kHeadRows * kQkvWidth), *rstd = buf.zeros(kHeadRows * (kQHeads + kKvHeads));
  be.qk_norm_forward(o, rstd, buf.upload(uniform(kHeadRows * kQkvWidth, 48, -3, 3)),
                     buf.upload(uniform(kHeadDim, 49, 0.5f, 1.5f)), buf.upload(uniform(kHeadDim, 50, 0.5f, 1.5f)),
                     kHeadRows, kQHeads, kKvHeads, kHeadDim);
  return buf.values({{o, kHeadRows * kQkvWidth}, {rstd, kHeadRows * (kQHeads + kKvHeads)}});
}

OpOutput qk_norm_backward_case(Backend& be) {
  Buffers buf(be);
  const std::vector<float> x = uniform(kHeadRows * kQkvWidth, 51, -3, 3), wq = uniform(kHeadDim, 52, 0.5f, 1.5f),
                           wk = uniform(kHeadDim, 53, 0.5f, 1.5f);
  float *y = buf.zeros(kHeadRows * kQkvWidth), *rstd = buf.zeros(kHeadRows * (kQHeads + kKvHeads));
  float *d = buf.zeros(kHeadRows * kQkvWidth), *dwq = buf.zeros(kHeadDim), *dwk = buf.zeros(kHeadDim);
  const float *gx = buf.upload(x), *gq = buf.upload(wq), *gk = buf.upload(wk);
  be.qk_norm_forward(y, rstd, gx, gq, gk, kHeadRows, kQHeads, kKvHeads, kHeadDim);
  be.qk_norm_backward(d, dwq, dwk, buf.upload(uniform(kHeadRows * kQkvWidth, 54)), gx, gq, gk, rstd, kHeadRows, kQHeads,
                      kKvHeads, kHeadDim, false);
  return buf.values({{d, kHeadRows * kQkvWidth}, {dwq, kHeadDim}, {dwk, kHeadDim}});
}

// A Mixture-of-Experts block's rows: 40 tokens of 36 values, a shared expert's row each, then 2
// routed slots (every 5th token's second slot dropped): row r of token r, then token t's routed rows.
constexpr int kMoeTokens = 40, kMoeWidth = 36, kMoeSlots = 3;

struct MoeRows {
  std::vector<int32_t> token, rows;
  int R() const { return int(token.size()); }
};

MoeRows moe_rows() {
  MoeRows m;
  m.rows.assign(size_t(kMoeTokens) * kMoeSlots, -1);
  for (int j = 0; j < kMoeSlots; ++j)
    for (int t = 0; t < kMoeTokens; ++t)
      if (!(j == 2 && t % 5 == 0)) m.rows[size_t(t) * kMoeSlots + j] = int32_t(m.token.size()), m.token.push_back(t);
  return m;
}

OpOutput moe_gather_case(Backend& be) {
  const MoeRows m = moe_rows();
  Buffers buf(be);
  float* xe = buf.zeros(int64_t(m.R()) * kMoeWidth);
  be.moe_gather(xe, buf.upload(uniform(size_t(kMoeTokens) * kMoeWidth, 55)), buf.upload(m.token), kMoeTokens, m.R(),
                kMoeWidth);
  return buf.values({{xe, int64_t(m.R()) * kMoeWidth}});
}

OpOutput moe_scatter_add_case(Backend& be) {
  const MoeRows m = moe_rows();
  Buffers buf(be);
  float* dx = buf.upload(uniform(size_t(kMoeTokens) * kMoeWidth, 56));
  be.moe_scatter_add(dx, buf.upload(uniform(size_t(m.R()) * kMoeWidth, 57)), buf.upload(m.rows), kMoeTokens, m.R(),
                     kMoeSlots, kMoeWidth);
  return buf.values({{dx, int64_t(kMoeTokens) * kMoeWidth}});
}

OpOutput moe_combine_case(Backend& be) {
  const MoeRows m = moe_rows();
  Buffers buf(be);
  float* out = buf.zeros(int64_t(kMoeTokens) * kMoeWidth);
  be.moe_combine(out, buf.upload(uniform(size_t(m.R()) * kMoeWidth, 58)), buf.upload(m.rows),
                 buf.upload(uniform(size_t(kMoeTokens) * kMoeSlots, 59, 0, 1)), kMoeTokens, m.R(), kMoeSlots,
                 kMoeWidth);
  return buf.values({{out, int64_t(kMoeTokens) * kMoeWidth}});
}

OpOutput moe_combine_backward_case(Backend& be) {
  const MoeRows m = moe_rows();
  Buffers buf(be);
  float *dy = buf.zeros(int64_t(m.R()) * kMoeWidth), *dg = buf.zeros(int64_t(kMoeTokens) * kMoeSlots);
  be.moe_combine_backward(dy, dg, buf.upload(uniform(size_t(kMoeTokens) * kMoeWidth, 60)),
                          buf.upload(uniform(size_t(m.R()) * kMoeWidth, 61)), buf.upload(m.rows),
                          buf.upload(uniform(size_t(kMoeTokens) * kMoeSlots, 62, 0, 1)), kMoeTokens, m.R(), kMoeSlots,
                          kMoeWidth);
  return buf.values({{dy, int64_t(m.R()) * kMoeWidth}, {dg, int64_t(kMoeTokens) * kMoeSlots}});
}

constexpr int kN = 48, kV = 300;

std::vector<int32_t> targets() {
  std::vector<int32_t> t(kN);
  for (int n = 0; n < kN; ++n) t[size_t(n)] = (n * 37 + 11) % kV;
  return t;
}

OpOutput softmax_xent_forward_case(Backend& be) {
  Buffers buf(be);
  float *losses = buf.zeros(kN), *stats = buf.zeros(2 * kN);
  be.softmax_xent_forward(losses, stats, buf.upload(uniform(size_t(kN) * kV, 31, -5, 5)), buf.upload(targets()), kN,
                          kV);
  return buf.values({{losses, kN}, {stats, 2 * kN}});
}

OpOutput softmax_xent_backward_case(Backend& be) {
  Buffers buf(be);
  const std::vector<float> logits = uniform(size_t(kN) * kV, 32, -5, 5);
  std::vector<float> stats(2 * kN);  // each row's max (exact) and a plausible denominator
  const std::vector<float> den = uniform(kN, 33, 20, 60);
  for (int n = 0; n < kN; ++n) {
    float mx = logits[size_t(n) * kV];
    for (int v = 1; v < kV; ++v) mx = std::max(mx, logits[size_t(n) * kV + size_t(v)]);
    stats[2 * size_t(n)] = mx, stats[2 * size_t(n) + 1] = den[size_t(n)];
  }
  float* d = buf.zeros(size_t(kN) * kV);
  be.softmax_xent_backward(d, buf.upload(logits), buf.upload(stats), buf.upload(targets()), kN, kV, 1.0f);
  return buf.values({{d, size_t(kN) * kV}});
}

constexpr int kVocab = 64, kTmax = 32;

std::vector<int32_t> tokens() {
  std::vector<int32_t> t(size_t(kB) * kT);
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 29 + 3) % 17);  // repeats: dwte sums
  return t;
}

OpOutput embedding_forward_case(Backend& be) {
  Buffers buf(be);
  float* o = buf.zeros(size_t(kB) * kT * kC);
  be.embedding_forward(o, buf.upload(tokens()), buf.upload(uniform(size_t(kVocab) * kC, 34)),
                       buf.upload(uniform(size_t(kTmax) * kC, 35)), kB, kT, kC, {0, kVocab});
  return buf.values({{o, size_t(kB) * kT * kC}});
}

OpOutput embedding_backward_case(Backend& be) {
  Buffers buf(be);
  float* dwte = buf.upload(uniform(size_t(kVocab) * kC, 36));  // the tied head's gradient already there
  float* dwpe = buf.zeros(size_t(kTmax) * kC);
  be.embedding_backward(dwte, dwpe, buf.upload(uniform(size_t(kB) * kT * kC, 37)), buf.upload(tokens()), kB, kT, kC,
                        kVocab, {0, kVocab});
  return buf.values({{dwte, size_t(kVocab) * kC}, {dwpe, size_t(kTmax) * kC}});
}

OpOutput residual_forward_case(Backend& be) {
  Buffers buf(be);
  float* o = buf.zeros(kPointwise);
  be.residual_forward(o, buf.upload(uniform(kPointwise, 38)), buf.upload(uniform(kPointwise, 39)), kPointwise);
  return buf.values({{o, kPointwise}});
}

OpOutput gradient_mean_case(Backend& be) {
  Buffers buf(be);
  float* x = buf.upload(uniform(kPointwise, 90, -8, 8));
  be.gradient_mean(x, kPointwise, 12.0f);  // not a power of two: the division rounds
  return buf.values({{x, kPointwise}});
}

OpOutput native_loss_mean_case(Backend& be) {
  Buffers buf(be);
  float* mean = buf.zeros(1);
  be.native_loss_mean(mean, buf.upload(uniform(kN, 91, 0, 10)), kN);
  return buf.values({{mean, 1}});
}

}  // namespace

std::vector<OpCase> model_op_cases() {
  return {
      {"gemm", "37×53×600, the four transpositions; bf16 operands continuing C", gemm_case},
      {"syrk", "40×300, both transpositions", syrk_case},
      {"bias_forward", "64×48", bias_forward_case},
      {"bias_backward", "300 tokens × 48", bias_backward_case},
      {"layernorm_forward", "64×100", layernorm_forward_case},
      {"layernorm_backward", "64×100", layernorm_backward_case},
      {"rmsnorm_forward", "64×100", rmsnorm_forward_case},
      {"rmsnorm_backward", "64×100", rmsnorm_backward_case},
      {"attention_forward", "B 2, T 24, C 48, 4 heads", attention_forward_case},
      {"attention_backward", "B 2, T 24, C 48, 4 heads", attention_backward_case},
      {"qk_max_keys", "B 2, T 24, C 48, 4 heads", qk_max_keys_case},
      {"qk_clip_scale", "1000", qk_clip_scale_case},
      {"gelu_forward", "4099", gelu_forward_case},
      {"gelu_backward", "4099", gelu_backward_case},
      {"swiglu_forward", "37 rows × 111", swiglu_forward_case},
      {"swiglu_backward", "37 rows × 111", swiglu_backward_case},
      {"rope_forward", "B 2, T 24, C 48, 4 heads", rope_forward_case},
      {"rope_backward", "B 2, T 24, C 48, 4 heads", rope_backward_case},
      {"kv_repeat_forward", "48 tokens, 6 query heads on 2 key/value heads of 12", kv_repeat_forward_case},
      {"kv_repeat_backward", "48 tokens, 6 query heads on 2 key/value heads of 12", kv_repeat_backward_case},
      {"qk_norm_forward", "48 tokens, 6 query and 2 key heads of 12", qk_norm_forward_case},
      {"qk_norm_backward", "48 tokens, 6 query and 2 key heads of 12", qk_norm_backward_case},
      {"moe_gather", "40 tokens of 36, 3 slots (8 dropped)", moe_gather_case},
      {"moe_scatter_add", "40 tokens of 36, 3 slots (8 dropped)", moe_scatter_add_case},
      {"moe_combine", "40 tokens of 36, 3 slots (8 dropped)", moe_combine_case},
      {"moe_combine_backward", "40 tokens of 36, 3 slots (8 dropped)", moe_combine_backward_case},
      {"softmax_xent_forward", "48 rows × 300", softmax_xent_forward_case},
      {"softmax_xent_backward", "48 rows × 300", softmax_xent_backward_case},
      {"embedding_forward", "B 2, T 24, C 48, vocabulary 64", embedding_forward_case},
      {"embedding_backward", "B 2, T 24, C 48, vocabulary 64", embedding_backward_case},
      {"residual_forward", "4099", residual_forward_case},
      {"gradient_mean", "4099", gradient_mean_case},
      {"native_loss_mean", "48", native_loss_mean_case},
  };
}

}  // namespace sb::invariance
