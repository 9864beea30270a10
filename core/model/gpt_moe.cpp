// The Mixture-of-Experts block of the GPT (docs/CONTRACT.md §MoE). The router's logits are one
// canonical GEMM; the routing — scores, top-k (ties: the lower index), gates, capacity — is
// computed on the host from ops/moe_router.hpp for each token alone, so neither the backend, the
// thread count nor a leaf's neighbours can change it; the experts' rows (each expert's tokens in
// position order) run through the backend's GEMMs and activations, whose chains are per row; a
// token's outputs combine in ascending expert index (ops/moe_combine.hpp). An expert's weight
// gradient is the chain over its rows, i.e. its tokens in leaf order; leaves and ranks then sum
// exactly as every gradient does. Under tensor parallelism every rank routes alike (the router is
// whole, its input replicated) and each expert splits as the dense MLP: fc by rows, proj by
// columns with the row-parallel chain (gpt_tp.cpp). Under expert parallelism the routed experts'
// rows run on their experts' ranks, each source's apart (gpt_moe_ep.cpp); the rest stays here.
#include "gpt_moe.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "samebits/core/ops/moe_router.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The scratch layout of moe_scratch_ (floats): dy (R, C) · dh (R, FC) · dact (R, F) · dxe (R, C) ·
// dgates (N, J) · dlogits (N, E), R = N·J.
struct MoeScratch {
  float *dy, *dh, *dact, *dxe, *dgates, *dlogits;
};

size_t scratch_floats(size_t N, size_t J, size_t C, size_t F, size_t FC, size_t E) {
  const size_t R = N * J;
  return 2 * R * C + R * FC + R * F + N * J + N * E;
}

MoeScratch scratch_of(float* base, size_t N, size_t J, size_t C, size_t F, size_t FC) {
  const size_t R = N * J;
  MoeScratch s{};
  s.dy = base, s.dh = s.dy + R * C, s.dact = s.dh + R * FC, s.dxe = s.dact + R * F, s.dgates = s.dxe + R * C;
  s.dlogits = s.dgates + N * J;
  return s;
}

}  // namespace

void GPT::bind_moe(MoeLayer& m, int layer) {
  const size_t N = size_t(B_) * cfg_.seq_len, C = size_t(cfg_.n_embd), E = size_t(cfg_.moe_experts);
  const size_t S = size_t(cfg_.moe_shared_experts), J = S + size_t(cfg_.moe_top_k), X = S + E;
  const size_t P = tp_ != nullptr ? size_t(tp_->size()) : 1;  // tensor-parallel ranks: F is this rank's part
  const size_t F = size_t(cfg_.expert_ffn()) / P, FC = size_t(cfg_.fc_blocks()) * F, R = N * J;
  const std::string h = "h." + std::to_string(layer) + ".moe.";
  m.router_w = wp(h + "router.w");
  bind_gradient(m.drouter_w, h + "router.w");
  m.experts.assign(X, MoeLayer::Expert{});
  for (size_t x = 0; x < X; ++x) {
    MoeLayer::Expert& e = m.experts[x];
    const std::string at = h + moe_expert_name(cfg_, int(x)) + ".";
    e.fcw = wp(at + "fc.w"), e.fcb = wp(at + "fc.b"), e.projw = wp(at + "proj.w"), e.projb = wp(at + "proj.b");
    bind_gradient(e.dfcw, at + "fc.w"), bind_gradient(e.dfcb, at + "fc.b");
    bind_gradient(e.dprojw, at + "proj.w"), bind_gradient(e.dprojb, at + "proj.b");
  }
  const auto floats = [&](size_t n) { return be_.alloc(DType::f32, {int64_t(std::max<size_t>(n, 1))}); };
  m.logits = floats(N * E), m.xe = floats(R * C), m.h = floats(R * FC), m.act = floats(R * F), m.y = floats(R * C);
  m.gates = floats(N * J);
  m.token = be_.alloc(DType::i32, {int64_t(std::max<size_t>(R, 1))});
  m.rows = be_.alloc(DType::i32, {int64_t(N * J)});
  if (moe_scratch_.data() == nullptr)
    moe_scratch_ = be_.alloc(DType::f32, {int64_t(scratch_floats(N, J, C, F, FC, E))});
  if (ep_ == nullptr) return;
  const size_t in = size_t(ep_->size()) * N * size_t(cfg_.moe_top_k);  // the most rows a rank's experts receive
  m.ep_x = floats(in * C), m.ep_h = floats(in * FC), m.ep_act = floats(in * F), m.ep_y = floats(in * C);
  if (ep_scratch_.data() == nullptr) ep_scratch_ = floats(in * (2 * C + FC + F));
}

void GPT::set_moe_bias(const std::vector<float>& bias) {
  const int blocks = cfg_.moe_experts > 0 ? cfg_.n_layer / cfg_.moe_every : 0;
  SB_CHECK(bias.size() == size_t(blocks) * size_t(cfg_.moe_experts), "MoE router bias of ", bias.size(),
           " values; the model has ", blocks, " MoE blocks of ", cfg_.moe_experts, " experts");
  moe_bias_ = bias;
}

// The router's logits of x (N, C, backend memory) — one canonical GEMM — then token by token on the
// host: scores, the top k (of the scores plus the block's bias when model.moe_bias_rate is set),
// the gates (of the scores alone).
void GPT::moe_route_tokens(MoeLayer& m, int layer, const float* x) {
  const int N = B_ * cfg_.seq_len, E = cfg_.moe_experts, k = cfg_.moe_top_k;
  const bool softmax = cfg_.moe_router == MoeRouter::softmax;
  be_.matmul_forward(m.logits.data_as<float>(), x, m.router_w, nullptr, N, cfg_.n_embd, E);
  std::vector<float> logits(size_t(N) * E);
  be_.copy_to_host(logits.data(), m.logits.data(), logits.size() * sizeof(float));
  const float* bias = cfg_.moe_bias_rate > 0.0 && !moe_bias_.empty()
                          ? moe_bias_.data() + size_t(layer / cfg_.moe_every) * size_t(E)
                          : nullptr;
  m.scores.resize(size_t(N) * E), m.chosen.resize(size_t(N) * k), m.chosen_gates.resize(size_t(N) * k);
#pragma omp parallel
  {
    std::vector<float> selection(bias != nullptr ? size_t(E) : 0);  // (E) this thread's
#pragma omp for schedule(static)
    for (int t = 0; t < N; ++t) {
      float* sc = &m.scores[size_t(t) * E];
      int32_t* ch = &m.chosen[size_t(t) * k];
      ops::moe_scores(&logits[size_t(t) * E], E, softmax, sc);
      if (bias != nullptr) ops::moe_selection_scores(sc, bias, E, selection.data());
      ops::moe_top_k(bias != nullptr ? selection.data() : sc, E, k, ch);
      ops::moe_gates(sc, ch, k, softmax, &m.chosen_gates[size_t(t) * k]);
    }
  }
}

const float* GPT::moe_input(int layer) const { return moe_layer(layer).input; }

void GPT::moe_route(int layer, const float* x, std::vector<int32_t>& chosen) {
  MoeLayer& m = moe_layer(layer);
  float* rows = m.xe.data_as<float>();  // (R ≥ N, C): the experts' input rows, free between steps
  be_.copy_from_host(rows, x, size_t(B_) * cfg_.seq_len * cfg_.n_embd * sizeof(float));
  moe_route_tokens(m, layer, rows);
  chosen = m.chosen;
}

void GPT::moe_forward(MoeLayer& m, int64_t layer, const float* x, float* out) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd, E = cfg_.moe_experts, k = cfg_.moe_top_k;
  const int S = cfg_.moe_shared_experts, J = S + k, X = S + E;
  const int P = tp_ != nullptr ? tp_->size() : 1;  // tensor-parallel ranks: F is this rank's part of each expert
  const int F = int(cfg_.expert_ffn()) / P, FC = int(cfg_.fc_blocks()) * F;
  const bool softmax = cfg_.moe_router == MoeRouter::softmax;
  {
    const trace::Scope s(be_, "h.", layer, ".moe.router matmul forward");
    moe_route_tokens(m, int(layer), x);
  }
  m.input = x;
  // The leaf's load-balancing loss: selections per expert, score sums (chains over tokens).
  m.counts.assign(size_t(E), 0);
  std::vector<float> sums(size_t(E), 0.0f);
  for (int t = 0; t < N; ++t) {
    for (int j = 0; j < k; ++j) ++m.counts[size_t(m.chosen[size_t(t) * k + j])];
    for (int e = 0; e < E; ++e) sums[size_t(e)] += m.scores[size_t(t) * E + e];
  }
  m.aux_loss = ops::moe_aux_loss(m.counts.data(), sums.data(), E, N, k, cfg_.moe_aux_loss);
  m.entropy.clear();
  for (int t = 0; t < N; ++t) m.entropy.add(ops::moe_entropy(&m.scores[size_t(t) * E], E, softmax));
  // Rows: shared experts take every token; a routed expert its selections in position order, the
  // first `capacity` of them when a capacity factor is set.
  const int64_t capacity =
      cfg_.moe_capacity > 0.0 ? int64_t(std::ceil(cfg_.moe_capacity * double(N) * k / double(E))) : int64_t(N);
  std::vector<int32_t> token, rows(size_t(N) * J, -1);
  std::vector<float> gates(size_t(N) * J, 0.0f);
  m.first.assign(size_t(X) + 1, 0);
  for (int xi = 0; xi < X; ++xi) {
    m.first[size_t(xi)] = int64_t(token.size());
    for (int t = 0; t < N; ++t) {
      int j = xi;  // a shared expert's slot
      if (xi >= S) {
        const int32_t* ch = &m.chosen[size_t(t) * k];
        const int32_t* at = std::find(ch, ch + k, xi - S);
        if (at == ch + k || int64_t(token.size()) - m.first[size_t(xi)] >= capacity) continue;
        j = S + int(at - ch);
      }
      rows[size_t(t) * J + j] = int32_t(token.size());
      gates[size_t(t) * J + j] = xi < S ? 1.0f : m.chosen_gates[size_t(t) * k + (j - S)];
      token.push_back(t);
    }
  }
  m.first[size_t(X)] = int64_t(token.size());
  m.R = int(token.size());
  be_.copy_from_host(m.token.data(), token.data(), token.size() * sizeof(int32_t));
  be_.copy_from_host(m.rows.data(), rows.data(), rows.size() * sizeof(int32_t));
  be_.copy_from_host(m.gates.data(), gates.data(), gates.size() * sizeof(float));
  float *xe = m.xe.data_as<float>(), *h = m.h.data_as<float>(), *act = m.act.data_as<float>(),
        *y = m.y.data_as<float>();
  {
    const trace::Scope s(be_, "h.", layer, ".moe gather forward");
    be_.moe_gather(xe, x, m.token.data_as<int32_t>(), N, m.R, C);
  }
  for (int xi = 0; xi < (ep_ != nullptr ? S : X); ++xi) {  // under expert parallelism: the shared ones here
    const int64_t r = m.first[size_t(xi)];
    const int n = int(m.first[size_t(xi) + 1] - r);
    if (n > 0) expert_forward(layer, xi, n, xe + r * C, h + r * FC, act + r * F, y + r * C);
  }
  if (ep_ != nullptr) moe_remote_forward(m, layer);
  const trace::Scope s(be_, "h.", layer, ".moe combine forward");
  be_.moe_combine(out, y, m.rows.data_as<int32_t>(), m.gates.data_as<float>(), N, m.R, J, C);
}

void GPT::expert_forward(int64_t layer, int xi, int n, const float* x, float* h, float* act, float* y) {
  const int C = cfg_.n_embd, S = cfg_.moe_shared_experts;
  const int F = int(cfg_.expert_ffn()) / (tp_ != nullptr ? tp_->size() : 1), FC = int(cfg_.fc_blocks()) * F;
  const MoeLayer::Expert& e = moe_layer(int(layer)).experts[size_t(xi)];
  const trace::Scope s(be_, "h.", layer, xi < S ? ".moe.s" : ".moe.e");
  const trace::Scope expert = trace::Scope::within(be_, "", xi < S ? xi : xi - S);
  be_.matmul_forward(h, x, e.fcw, e.fcb, n, C, FC);
  if (cfg_.mlp == MlpKind::swiglu) be_.swiglu_forward(act, h, n, F);
  else be_.gelu_forward(act, h, int64_t{n} * F);
  row_forward(y, act, e.projw, e.projb, n, F, C);
}

void GPT::expert_backward(int64_t layer, int xi, int n, const float* dy, const float* x, const float* h,
                          const float* act, float* dact, float* dh, float* dx) {
  const int C = cfg_.n_embd, S = cfg_.moe_shared_experts, P = tp_ != nullptr ? tp_->size() : 1;
  const int F = int(cfg_.expert_ffn()) / P, FC = int(cfg_.fc_blocks()) * F;
  const MoeLayer::Expert& e = moe_layer(int(layer)).experts[size_t(xi)];
  const trace::Scope s(be_, "h.", layer, xi < S ? ".moe.s" : ".moe.e");
  const trace::Scope expert = trace::Scope::within(be_, "", xi < S ? xi : xi - S);
  if (n == 0) {  // no token: its gradients are zero (every gradient is written whole)
    be_.zero(e.dfcw, size_t(FC) * C * sizeof(float)), be_.zero(e.dprojw, size_t(C) * F * sizeof(float));
    if (e.dfcb != nullptr) be_.zero(e.dfcb, size_t(FC) * sizeof(float)), be_.zero(e.dprojb, size_t(C) * sizeof(float));
    return;
  }
  be_.matmul_backward(dact, e.dprojw, e.dprojb, dy, act, e.projw, n, F, C);
  if (cfg_.mlp == MlpKind::swiglu) be_.swiglu_backward(dh, h, dact, n, F);
  else be_.gelu_backward(dh, h, dact, int64_t{n} * F);
  col_backward(dx, e.dfcw, e.dfcb, dh, x, e.fcw, n, C, FC, FC * P, int(cfg_.fc_blocks()));
}

void GPT::moe_backward(MoeLayer& m, int64_t layer, const float* x, const float* dout, float* dx, float loss_scale) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd, E = cfg_.moe_experts, k = cfg_.moe_top_k;
  const int S = cfg_.moe_shared_experts, J = S + k, X = S + E;
  const int P = tp_ != nullptr ? tp_->size() : 1;  // tensor-parallel ranks: F is this rank's part of each expert
  const int F = int(cfg_.expert_ffn()) / P, FC = int(cfg_.fc_blocks()) * F;
  const bool softmax = cfg_.moe_router == MoeRouter::softmax;
  const MoeScratch d =
      scratch_of(moe_scratch_.data_as<float>(), size_t(N), size_t(J), size_t(C), size_t(F), size_t(FC));
  const float *xe = m.xe.data_as<float>(), *h = m.h.data_as<float>(), *act = m.act.data_as<float>();
  {
    const trace::Scope s(be_, "h.", layer, ".moe combine backward");
    be_.moe_combine_backward(d.dy, d.dgates, dout, m.y.data_as<float>(), m.rows.data_as<int32_t>(),
                             m.gates.data_as<float>(), N, m.R, J, C);
  }
  for (int xi = 0; xi < (ep_ != nullptr ? S : X); ++xi) {
    const int64_t r = m.first[size_t(xi)];
    expert_backward(layer, xi, int(m.first[size_t(xi) + 1] - r), d.dy + r * C, xe + r * C, h + r * FC, act + r * F,
                    d.dact + r * F, d.dh + r * FC, d.dxe + r * C);
  }
  if (ep_ != nullptr) moe_remote_backward(m, layer, d.dy, d.dxe);
  // The router: the gates' gradients and the load-balancing term on each token's scores.
  std::vector<float> dgates(size_t(N) * J), dlogits(size_t(N) * E), aux(static_cast<size_t>(E));
  be_.copy_to_host(dgates.data(), d.dgates, dgates.size() * sizeof(float));
  for (int e = 0; e < E; ++e)
    aux[size_t(e)] = ops::moe_aux_gradient(m.counts[size_t(e)], E, N, k, cfg_.moe_aux_loss, loss_scale);
  const float* aux_or_null = cfg_.moe_aux_loss > 0.0 ? aux.data() : nullptr;
#pragma omp parallel
  {
    std::vector<float> dscores(static_cast<size_t>(E));  // (E) this thread's, reused token by token
#pragma omp for schedule(static)
    for (int t = 0; t < N; ++t) {
      const float* sc = &m.scores[size_t(t) * E];
      ops::moe_score_gradient(sc, &m.chosen[size_t(t) * k], &m.chosen_gates[size_t(t) * k], &dgates[size_t(t) * J + S],
                              E, k, softmax, aux_or_null, dscores.data());
      ops::moe_logit_gradient(sc, dscores.data(), E, softmax, &dlogits[size_t(t) * E]);
    }
  }
  be_.copy_from_host(d.dlogits, dlogits.data(), dlogits.size() * sizeof(float));
  {
    const trace::Scope s(be_, "h.", layer, ".moe.router matmul backward");
    be_.matmul_backward(dx, m.drouter_w, nullptr, d.dlogits, x, m.router_w, N, C, E);
  }
  const trace::Scope s(be_, "h.", layer, ".moe scatter backward");
  be_.moe_scatter_add(dx, d.dxe, m.rows.data_as<int32_t>(), N, m.R, J, C);
}

}  // namespace sb
