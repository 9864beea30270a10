// The divergence analysis (experiments/include/samebits/cli/divergence.hpp) on inputs whose answer
// is known: distance points of equal and 1-ULP-apart states, the growth rate of a synthetic
// exponential recovered, a known jump, the prediction agreement of equal states (0 and exactly 1)
// and its correlation against a plain two-pass fp64 computation, and side by side: identical
// configs identical, a 1-ULP perturbation after step 5 first divergent at step 6.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samebits/cli/divergence.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/train/perturbation.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"
#include "support/train_bits.hpp"

namespace {

sb::Config tiny_config() {
  return sb::test::tiny_gpt_config({.n_layer = 1, .eval_leaves = 2, .doc_len = std::nullopt});
}

// Initial weights of the tiny model with `seed`.  Returns (flat_size).
std::vector<float> initial_weights(const sb::Config& c, uint64_t seed) {
  auto be = sb::make_cpu_backend();
  sb::GPT m(c.model, 1, *be);
  m.init(seed);
  const float* w = m.weights().data_as<float>();
  return std::vector<float>(w, w + m.flat_size());
}

using sbt::error_of;

}  // namespace

TEST_CASE("distance_point: equal states are 0 apart; one element 1 ULP away is counted exactly") {
  const sb::Config c = tiny_config();
  const auto tensors = sb::run::tensor_infos(c.model);
  const std::vector<float> a = initial_weights(c, 1);
  const sb::cli::DistancePoint same = sb::cli::distance_point(3, tensors, a, a);
  CHECK(same.step == 3);
  CHECK(same.rel_l2 == 0);
  CHECK(same.max_ulp == 0);
  CHECK(same.differing_fraction == 0);

  std::vector<float> b = a;
  const size_t i = tensors[4].offset + 5;
  b[i] = sb::step_ulps(a[i], 1);
  const sb::cli::DistancePoint one = sb::cli::distance_point(4, tensors, a, b);
  uint64_t numel = 0;
  double norm = 0;
  for (const auto& t : tensors) {
    numel += t.numel;
    for (size_t k = t.offset; k < t.offset + t.numel; ++k) norm += double(a[k]) * double(a[k]);
  }
  CHECK(one.max_ulp == 1);
  CHECK(one.differing_fraction == 1.0 / double(numel));
  CHECK(one.rel_l2 == std::fabs(double(b[i]) - double(a[i])) / std::sqrt(norm));
  CHECK(sb::cli::ulp_distance(a[i], b[i]) == 1);
}

TEST_CASE("distance_growth recovers the rate of an exponential and finds a known jump") {
  // rel_l2 = 1e-9 · e^{0.3 (s − 5)} at s = 5, 10, …, 60 after zeros at 0 and 4.
  std::vector<sb::cli::DistancePoint> curve{{0, 0, 0, 0}, {4, 0, 0, 0}};
  for (int64_t s = 5; s <= 60; s += 5) curve.push_back({s, 1e-9 * std::exp(0.3 * double(s - 5)), 1, 0.5});
  const sb::cli::Growth g = sb::cli::distance_growth(curve, 5);
  CHECK(g.points == 12);
  CHECK(g.rate == doctest::Approx(0.3).epsilon(1e-6));
  CHECK(g.intercept == doctest::Approx(std::log(1e-9) - 1.5).epsilon(1e-6));
  // 1e-9 · e^{0.3 k} >= 0.01 first at k = 54 (s = 59): the points are 5 apart, so s = 60.
  CHECK(g.threshold_step == 60);
  CHECK(g.threshold == sb::cli::kDistanceThreshold);
  CHECK(sb::cli::distance_growth(curve, 5, 1e-6).threshold_step == 30);

  // A jump of ×5000 between steps 7 and 8, ×2 elsewhere; steps before the first divergence and
  // zero distances are not fitted.
  const std::vector<sb::cli::DistancePoint> jumpy{{2, 0.5, 9, 0.1},  {6, 0, 0, 0},      {7, 1e-9, 1, 0.1},
                                                  {8, 5e-6, 9, 0.2}, {9, 1e-5, 9, 0.3}, {10, 2e-5, 9, 0.3}};
  const sb::cli::Growth j = sb::cli::distance_growth(jumpy, 7);
  CHECK(j.points == 4);
  CHECK(j.jump_step == 8);
  CHECK(j.jump == doctest::Approx(std::log(5000.0)).epsilon(1e-6));
  CHECK(j.threshold_step == 2);  // any point counts for the threshold

  const sb::cli::Growth none =
      sb::cli::distance_growth(std::vector<sb::cli::DistancePoint>{{0, 0, 0, 0}, {5, 1e-8, 1, 0}}, 5);
  CHECK(none.points == 1);
  CHECK(std::isnan(none.rate));
  CHECK(none.jump_step == 0);
  CHECK(none.threshold_step == 0);
  const std::vector<sb::cli::DistancePoint> backwards{{5, 1, 0, 0}, {4, 1, 0, 0}};
  CHECK(error_of([&] { sb::cli::distance_growth(backwards, 0); }).find("ascending step order") != std::string::npos);
}

TEST_CASE("prediction agreement: equal states agree exactly; the correlation matches a two-pass fp64 one") {
  const sb::Config c = tiny_config();
  const std::vector<float> a = initial_weights(c, 1), b = initial_weights(c, 2);
  sb::cli::AgreementProbe probe(c);
  CHECK(probe.sequences() == c.train.eval_leaves * c.data.leaf_size);
  const sb::cli::Agreement same = probe.compare(a, a, 7, "snapshot");
  CHECK(same.step == 7);
  CHECK(same.source == "snapshot");
  CHECK(same.positions == 2 * 16);
  CHECK(same.disagreeing == 0);
  CHECK(same.disagreement == 0);
  CHECK(same.logit_correlation == 1.0);
  CHECK(same.loss_a == same.loss_b);

  const sb::cli::Agreement diff = probe.compare(a, b);
  CHECK(diff.disagreeing > 0);
  CHECK(diff.disagreement == double(diff.disagreeing) / double(diff.positions));
  CHECK(diff.logit_correlation < 1.0);
  CHECK(probe.compare(b, a).disagreeing == diff.disagreeing);

  // The reference: the same forward passes, logits kept, Pearson's r from means, then co-moments.
  auto be = sb::make_cpu_backend();
  sb::GPT ma(c.model, 1, *be), mb(c.model, 1, *be);
  std::memcpy(ma.weights().data(), a.data(), a.size() * sizeof(float));
  std::memcpy(mb.weights().data(), b.data(), b.size() * sizeof(float));
  const auto source =
      sb::data::open_source(sb::to_data_config(c), sb::data::Split::validation, sb::io::isolated_hdf5_decoder());
  const sb::data::ValidationSet set(*source, c.model.seq_len, 2);
  std::vector<double> xa, xb;
  std::vector<int32_t> tokens(17);
  for (uint64_t s = 0; s < 2; ++s) {
    set.sequence(s, tokens.data());
    ma.forward(tokens.data());
    mb.forward(tokens.data());
    xa.insert(xa.end(), ma.logits(), ma.logits() + 16 * 64);
    xb.insert(xb.end(), mb.logits(), mb.logits() + 16 * 64);
  }
  double mean_a = 0, mean_b = 0;
  for (size_t k = 0; k < xa.size(); ++k) {
    mean_a += xa[k];
    mean_b += xb[k];
  }
  mean_a /= double(xa.size());
  mean_b /= double(xb.size());
  double saa = 0, sbb = 0, sab = 0;
  for (size_t k = 0; k < xa.size(); ++k) {
    saa += (xa[k] - mean_a) * (xa[k] - mean_a);
    sbb += (xb[k] - mean_b) * (xb[k] - mean_b);
    sab += (xa[k] - mean_a) * (xb[k] - mean_b);
  }
  CHECK(diff.logit_correlation == doctest::Approx(sab / std::sqrt(saa * sbb)).epsilon(1e-12));
}

TEST_CASE("side by side: identical configs stay identical") {
  const sb::Config c = tiny_config();
  const sb::cli::SideBySide s = sb::cli::side_by_side(c, c, 4, 1);
  CHECK(s.identical());
  CHECK(s.first_divergent_step == 0);
  CHECK(s.experiment_differences.empty());
  REQUIRE(s.distance.size() == 5);
  for (const auto& p : s.distance) CHECK(p.rel_l2 == 0);
  CHECK(s.growth.points == 0);
  REQUIRE(s.agreement.has_value());
  CHECK(s.agreement->logit_correlation == 1.0);
  CHECK(s.agreement->disagreeing == 0);
}

TEST_CASE("side by side: a 1-ULP perturbation after step 5 first diverges at step 6") {
  const sb::Config a = tiny_config();
  sb::Config b = a;
  b.perturb = {"h.0.attn.qkv.w", 17, 1, 5};
  int64_t calls = 0;
  sb::cli::SideBySideOptions options;
  options.progress = [&](int64_t, float, float, const sb::cli::DistancePoint*) { ++calls; };
  const sb::cli::SideBySide s = sb::cli::side_by_side(a, b, 0, 2, options);
  CHECK(calls == 11);
  CHECK_FALSE(s.identical());
  CHECK(s.steps == 10);
  CHECK(s.first_divergent_step == 6);
  CHECK(s.experiment_differences.size() == 4);  // the [perturb] keys
  std::vector<int64_t> steps;
  for (const auto& p : s.distance) steps.push_back(p.step);
  CHECK(steps == std::vector<int64_t>{0, 2, 4, 6, 8, 10});
  for (const auto& p : s.distance) {
    CAPTURE(p.step);
    if (p.step <= 4) CHECK(p.rel_l2 == 0);
    else CHECK(p.rel_l2 > 0);
  }
  for (size_t k = 0; k < 5; ++k) CHECK(std::memcmp(&s.loss_a[k], &s.loss_b[k], sizeof(float)) == 0);
  CHECK(s.growth.points == 3);
  CHECK(std::isfinite(s.growth.rate));
  REQUIRE(s.agreement.has_value());
  CHECK(s.agreement->logit_correlation < 1.0);
  const std::string json = sb::cli::side_by_side_json(s);
  CHECK(json.find("\"first_divergent_step\": 6,") != std::string::npos);
  CHECK(json.find("\"mode\": \"side_by_side\"") != std::string::npos);
  const std::string text = sb::cli::side_by_side_text(s);
  CHECK(text.find("first divergent step 6") != std::string::npos);
  CHECK(text.find("perturb.tensor = (absent) | h.0.attn.qkv.w") != std::string::npos);

  sb::Config wide = a;
  wide.model.n_embd = 64;
  CHECK(error_of([&] { sb::cli::side_by_side(a, wide, 2, 1); }).find("different tensor tables") != std::string::npos);
  CHECK(error_of([&] { sb::cli::side_by_side(a, a, 11, 1); }).find("at most the smaller") != std::string::npos);
  CHECK(error_of([&] { sb::cli::side_by_side(a, a, 2, 0); }).find("use 1 or more") != std::string::npos);
}

TEST_CASE(
    "route agreement: an MoE model's token routes compared per block; equal states agree, a moved router does "
    "not; a dense model has none") {
  sb::Config c = tiny_config();
  CHECK(sb::cli::AgreementProbe(c).compare(initial_weights(c, 1), initial_weights(c, 1)).routes == 0);
  c.model.n_layer = 2;
  c.model.moe_experts = 4, c.model.moe_top_k = 2, c.model.moe_every = 2;  // block 1 only
  const std::vector<float> a = initial_weights(c, 1);
  sb::cli::AgreementProbe probe(c);
  const sb::cli::Agreement same = probe.compare(a, a);
  CHECK(same.routes == 2 * 16);  // positions × one MoE block
  CHECK(same.routes_differing == 0);
  CHECK(same.route_disagreement == 0);
  // The router of block 1 replaced by another seed's: every expert set recomputed from other logits.
  std::vector<float> b = a;
  const std::vector<float> other = initial_weights(c, 2);
  const sb::ParamView* router = sb::find_param(sb::gpt_param_layout(c.model), "h.1.moe.router.w");
  REQUIRE(router != nullptr);
  std::copy_n(other.begin() + ptrdiff_t(router->offset), router->numel, b.begin() + ptrdiff_t(router->offset));
  const sb::cli::Agreement moved = probe.compare(a, b);
  CHECK(moved.routes == 2 * 16);
  CHECK(moved.routes_differing > 0);
  CHECK(moved.route_disagreement == double(moved.routes_differing) / double(moved.routes));
}
