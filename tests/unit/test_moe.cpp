// Mixture-of-Experts pieces (ops/moe_router.hpp, ops/moe_combine.hpp, core/cpu/moe_*.cpp,
// core/model/gpt_moe.cpp): the top-k selection by score then lower index (forced ties included),
// the row ops bitwise equal to plain loops over the formulas on 1–4 threads, a model whose router
// weights are zero (every logit equal) sending every token to experts 0 … k−1, the
// auxiliary-loss-free bias's update and steering, and the re-route that counts route flips.
#include <doctest/doctest.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/ops/moe_combine.hpp"
#include "samebits/core/ops/moe_router.hpp"
#include "samebits/det/error.hpp"
#include "test_op_support.hpp"

using namespace sb;

TEST_CASE("MoE top-k: the larger score first, equal scores to the lower index, chosen in ascending index") {
  std::vector<int32_t> chosen(3);
  const float equal[6] = {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f};
  ops::moe_top_k(equal, 6, 3, chosen.data());
  CHECK(chosen == std::vector<int32_t>{0, 1, 2});
  const float some[6] = {0.1f, 0.3f, 0.2f, 0.3f, 0.05f, 0.3f};  // three tied for first
  ops::moe_top_k(some, 6, 2, chosen.data());
  CHECK(chosen[0] == 1);
  CHECK(chosen[1] == 3);
  const float ordered[6] = {0.0f, 0.5f, 0.1f, 0.9f, 0.2f, 0.3f};
  ops::moe_top_k(ordered, 6, 3, chosen.data());
  CHECK(chosen == std::vector<int32_t>{1, 3, 5});
  const float signs[2] = {-0.0f, 0.0f};  // −0 and +0 compare equal: the lower index
  ops::moe_top_k(signs, 2, 1, chosen.data());
  CHECK(chosen[0] == 0);
  // The gates: softmax's are the chosen probabilities; sigmoid's the chosen scores normalised.
  float gates[3], scores[6];
  const float z[6] = {0.5f, -1.0f, 2.0f, 0.0f, 2.0f, 1.0f};
  ops::moe_scores(z, 6, false, scores);
  ops::moe_top_k(scores, 6, 3, chosen.data());
  CHECK(chosen == std::vector<int32_t>{2, 4, 5});
  ops::moe_gates(scores, chosen.data(), 3, false, gates);
  CHECK(gates[0] == scores[2] / ((scores[2] + scores[4]) + scores[5]));
  ops::moe_scores(z, 6, true, scores);
  ops::moe_gates(scores, chosen.data(), 3, true, gates);
  CHECK(std::memcmp(&gates[2], &scores[5], sizeof(float)) == 0);
}

TEST_CASE("MoE row ops: the CPU equals plain loops over the formulas, bitwise, on 1-4 threads") {
  auto be = make_cpu_backend();
  const int N = 23, C = 37, J = 3;
  // Row r of the R = 2N − 3 rows: token r for the first expert, then the even tokens but 0, …
  std::vector<int32_t> token, rows(size_t(N) * J, -1);
  for (int t = 0; t < N; ++t) rows[size_t(t) * J] = int32_t(token.size()), token.push_back(t);
  for (int t = 1; t < N; t += 2) rows[size_t(t) * J + 1] = int32_t(token.size()), token.push_back(t);
  for (int t = 2; t < N; t += 2) rows[size_t(t) * J + 2] = int32_t(token.size()), token.push_back(t);
  const int R = int(token.size());
  const auto x = test::uniform(size_t(N) * C, 1), y = test::uniform(size_t(R) * C, 2);
  const auto dout = test::uniform(size_t(N) * C, 3), dxe = test::uniform(size_t(R) * C, 4);
  const auto gates = test::uniform(size_t(N) * J, 5, 0.0f, 1.0f);
  std::vector<float> xe_ref(size_t(R) * C), dx_ref = dout, out_ref(size_t(N) * C, 0.0f), dy_ref(size_t(R) * C),
                                            dg_ref(size_t(N) * J, 0.0f);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) xe_ref[size_t(r) * C + c] = x[size_t(token[size_t(r)]) * C + c];
  for (int t = 0; t < N; ++t)
    for (int j = 0; j < J; ++j) {
      const int32_t row = rows[size_t(t) * J + j];
      if (row < 0) continue;
      const float g = gates[size_t(t) * J + j];
      for (int c = 0; c < C; ++c) {
        const size_t o = size_t(t) * C + c, i = size_t(row) * C + c;
        dx_ref[o] = dx_ref[o] + dxe[i];
        out_ref[o] = det::fma_f32(g, y[i], out_ref[o]);
        dy_ref[i] = g * dout[o];
      }
      float dot = 0.0f;
      for (int c = 0; c < C; ++c) dot = det::fma_f32(dout[size_t(t) * C + c], y[size_t(row) * C + c], dot);
      dg_ref[size_t(t) * J + j] = dot;
    }
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    std::vector<float> xe(xe_ref.size()), dx = dout, out(out_ref.size()), dy(dy_ref.size()), dg(dg_ref.size(), 7.0f);
    be->moe_gather(xe.data(), x.data(), token.data(), N, R, C);
    be->moe_scatter_add(dx.data(), dxe.data(), rows.data(), N, R, J, C);
    be->moe_combine(out.data(), y.data(), rows.data(), gates.data(), N, R, J, C);
    be->moe_combine_backward(dy.data(), dg.data(), dout.data(), y.data(), rows.data(), gates.data(), N, R, J, C);
    CAPTURE(threads);
    CHECK(test::same_bits(xe, xe_ref, "moe_gather"));
    CHECK(test::same_bits(dx, dx_ref, "moe_scatter_add"));
    CHECK(test::same_bits(out, out_ref, "moe_combine"));
    CHECK(test::same_bits(dy, dy_ref, "moe_combine_backward rows"));
    CHECK(test::same_bits(dg, dg_ref, "moe_combine_backward gates"));
  }
  omp_set_num_threads(saved);
}

TEST_CASE("MoE router with forced ties: zero router weights send every token to experts 0 … k−1") {
  GPTConfig cfg;
  cfg.vocab = 31, cfg.seq_len = 8, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16;
  cfg.moe_experts = 6, cfg.moe_top_k = 2, cfg.moe_shared_experts = 1;
  for (MoeRouter router : {MoeRouter::softmax, MoeRouter::sigmoid}) {
    cfg.moe_router = router;
    auto be = make_cpu_backend();
    GPT model(cfg, 2, *be);
    model.init(3);
    float* w = model.weights().data_as<float>();
    for (const ParamView& p : model.params())
      if (p.kind == ParamKind::router) std::fill(w + p.offset, w + p.offset + p.numel, 0.0f);
    std::vector<int32_t> tokens(size_t(2) * (cfg.seq_len + 1));
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i * 7 % size_t(cfg.vocab));
    const int saved = omp_get_max_threads();
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      model.forward(tokens.data());
      model.backward();
      for (int layer = 0; layer < cfg.n_layer; ++layer) {
        const std::vector<int32_t>& chosen = model.moe_choices(layer);
        REQUIRE(chosen.size() == size_t(2) * cfg.seq_len * 2);
        bool lowest = true;
        for (size_t i = 0; i < chosen.size(); ++i) lowest = lowest && chosen[i] == int32_t(i % 2);
        CAPTURE(layer);
        CAPTURE(threads);
        CHECK(lowest);
        // Every token chose the same two experts: f = (½, ½, 0, …), P = 1/6 each (softmax).
        if (router == MoeRouter::softmax) CHECK(model.moe_aux_loss(layer) == doctest::Approx(0.01 * 6 * (1.0 / 6)));
      }
    }
    omp_set_num_threads(saved);
  }
}

TEST_CASE("MoE auxiliary-loss-free bias: ±rate toward the mean load, compared in integers") {
  std::vector<float> bias = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t counts[4] = {10, 2, 6, 6};  // mean 6: the first above, the second below, two equal
  ops::moe_bias_update(bias.data(), counts, 4, 0.001f);
  CHECK(bias == std::vector<float>{-0.001f, 0.001f, 0.0f, 0.0f});
  std::vector<float> odd = {0.5f, 0.5f, 0.5f};
  const int64_t uneven[3] = {3, 2, 2};  // mean 7/3: 3·3 > 7, 3·2 < 7
  ops::moe_bias_update(odd.data(), uneven, 3, 0.25f);
  CHECK(odd == std::vector<float>{0.25f, 0.75f, 0.75f});
  const float scores[3] = {0.5f, 0.25f, 0.25f}, steer[3] = {0.0f, 0.125f, 0.5f};
  float selection[3];
  ops::moe_selection_scores(scores, steer, 3, selection);
  std::vector<int32_t> chosen(1);
  ops::moe_top_k(selection, 3, 1, chosen.data());
  CHECK(chosen[0] == 2);  // 0.75 beats 0.5 once biased
}

TEST_CASE(
    "MoE routing: the bias steers the selection; a re-route of the forward's input equals its routing "
    "until the router moves") {
  GPTConfig cfg;
  cfg.vocab = 31, cfg.seq_len = 8, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 16;
  cfg.moe_experts = 6, cfg.moe_top_k = 2, cfg.moe_shared_experts = 1, cfg.moe_bias_rate = 0.001;
  std::vector<int32_t> tokens(size_t(2) * (cfg.seq_len + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i * 7 % size_t(cfg.vocab));
  for (MoeRouter router : {MoeRouter::softmax, MoeRouter::sigmoid}) {
    CAPTURE(router == MoeRouter::softmax);
    cfg.moe_router = router;
    auto be = make_cpu_backend();
    GPT model(cfg, 2, *be);
    model.init(3);
    // Re-routing the recorded input with unchanged weights gives the forward's choice, bitwise.
    model.forward(tokens.data());
    for (int layer = 0; layer < cfg.n_layer; ++layer) {
      const std::vector<int32_t> forward = model.moe_choices(layer);
      std::vector<float> x(size_t(model.leaf_tokens()) * cfg.n_embd);
      be->copy_to_host(x.data(), model.moe_input(layer), x.size() * sizeof(float));
      std::vector<int32_t> again;
      model.moe_route(layer, x.data(), again);
      CHECK(again == forward);
      float* w = model.weights().data_as<float>();  // the positive control: a moved router re-routes
      const ParamView* r = find_param(model.params(), "h." + std::to_string(layer) + ".moe.router.w");
      for (size_t i = 0; i < r->numel; i += 3) w[r->offset + i] += 0.5f;
      model.moe_route(layer, x.data(), again);
      CHECK(again != forward);
    }
    // Forced ties (zero router weights): the bias alone picks experts 4 and 5.
    float* w = model.weights().data_as<float>();
    for (const ParamView& p : model.params())
      if (p.kind == ParamKind::router) std::fill(w + p.offset, w + p.offset + p.numel, 0.0f);
    model.set_moe_bias({0, 0, 0, 0, 0.5f, 0.25f, 0, 0, 0, 0, 0.25f, 0.5f});
    model.forward(tokens.data());
    for (int layer = 0; layer < cfg.n_layer; ++layer) {
      const std::vector<int32_t>& chosen = model.moe_choices(layer);
      bool steered = true;
      for (size_t i = 0; i < chosen.size(); ++i) steered = steered && chosen[i] == int32_t(4 + i % 2);
      CHECK(steered);
      // Every token chose the same two experts: f = (0, …, ½, ½), P = 1/6 each (softmax).
      if (router == MoeRouter::softmax) CHECK(model.moe_aux_loss(layer) == doctest::Approx(0.01 * 6 * (1.0 / 6)));
    }
    CHECK_THROWS_AS(model.set_moe_bias(std::vector<float>(11)), sb::Error);
  }
}
