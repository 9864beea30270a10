// [perturb] and data.order_seed: ULP stepping on the float line (through zero, refused
// at inf/NaN and past FLT_MAX), the config's checks and experiment id, the perturbation applied
// once before step s+1 (fingerprints equal through step s, different at s+1), resume on either
// side of s bitwise equal to the uninterrupted run, and the default experiment's bits unchanged.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samebits/cli/inspect.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/train/perturbation.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"
#include "support/train_bits.hpp"

namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

using sbt::error_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A finite source of `n` tokens: token i is i % 61.
class CountingSource : public sb::data::TokenSource {
 public:
  explicit CountingSource(uint64_t n) : n_(n) {}
  uint64_t size() const override { return n_; }
  uint64_t vocab() const override { return 64; }
  std::string describe() const override { return "counting source"; }
  void read(uint64_t pos, uint64_t len, int32_t* out) const override {
    for (uint64_t i = 0; i < len; ++i) out[i] = int32_t((pos + i) % 61);
  }

 private:
  uint64_t n_;
};

// The tiny experiment of tests/integration/test_cli_support.hpp with 8 steps (its golden values
// below were recorded by `samebits train` before [perturb] and data.order_seed existed).
sb::Config tiny_config() {
  return sb::test::tiny_gpt_config(
      {.n_layer = 1, .steps = 8, .eval_every = 4, .eval_leaves = 2, .doc_len = std::nullopt});
}

// Every step's loss bits and parameter and gradient fingerprints.
struct Series {
  std::vector<uint32_t> loss;
  std::vector<std::vector<uint64_t>> params, grads;
};

void record(Series& s, const sb::StepResult& r) {
  s.loss.push_back(bits(r.stats.loss));
  s.params.push_back(r.param_fingerprints);
  s.grads.push_back(r.grad_fingerprints);
}

Series train(const sb::Config& c, int64_t steps) {
  sb::Trainer t(c);
  Series s;
  for (int64_t k = 0; k < steps; ++k) record(s, t.step());
  return s;
}

// Step k (1-based) of a and b recorded the same bits.
bool same_step(const Series& a, const Series& b, int64_t k) {
  const auto i = size_t(k - 1);
  return a.loss[i] == b.loss[i] && a.params[i] == b.params[i] && a.grads[i] == b.grads[i];
}

}  // namespace

TEST_CASE("step_ulps walks the float line, through zero") {
  CHECK(sb::step_ulps(1.0f, 1) == std::nextafter(1.0f, 2.0f));
  CHECK(sb::step_ulps(1.0f, -1) == std::nextafter(1.0f, 0.0f));
  CHECK(sb::step_ulps(-1.0f, 1) == std::nextafter(-1.0f, 0.0f));
  CHECK(sb::step_ulps(-1.0f, -1) == std::nextafter(-1.0f, -2.0f));
  CHECK(sb::step_ulps(1.0f, int64_t{1} << 23) == 2.0f);
  CHECK(bits(sb::step_ulps(0.0f, 1)) == 0x00000001u);
  CHECK(bits(sb::step_ulps(0.0f, -1)) == 0x80000001u);
  CHECK(bits(sb::step_ulps(-0.0f, 1)) == 0x00000001u);
  CHECK(bits(sb::step_ulps(-0.0f, -1)) == 0x80000001u);
  CHECK(bits(sb::step_ulps(from_bits(0x00000001u), -1)) == 0x00000000u);  // lands on +0
  CHECK(bits(sb::step_ulps(from_bits(0x80000001u), 1)) == 0x00000000u);
  CHECK(bits(sb::step_ulps(from_bits(0x80000001u), 3)) == 0x00000002u);
  CHECK(bits(sb::step_ulps(from_bits(0x00000002u), -5)) == 0x80000003u);
  CHECK(bits(sb::step_ulps(std::numeric_limits<float>::min(), -1)) == 0x007fffffu);  // into subnormals
  const float max = std::numeric_limits<float>::max();
  CHECK(sb::step_ulps(max, -1) == std::nextafter(max, 0.0f));
  CHECK(sb::step_ulps(std::nextafter(max, 0.0f), 1) == max);
  CHECK(sb::step_ulps(-max, 0x7f7fffff) == 0.0f);
  // Round trips (up then down) over a spread of values and steps.
  for (const float x : {1.0f, -3.5f, 1e-40f, -1e-42f, 6.1e-5f, 1e30f}) {
    for (const int64_t k : {1, -1, 7, -1000, 1 << 20}) {
      CHECK(bits(sb::step_ulps(sb::step_ulps(x, k), -k)) == bits(x));
    }
  }
}

TEST_CASE("step_ulps refuses non-finite values and steps past the largest float") {
  const float max = std::numeric_limits<float>::max();
  CHECK(contains(error_of([&] { sb::step_ulps(max, 1); }), "perturb.ulps=1 moves"));
  CHECK(contains(error_of([&] { sb::step_ulps(max, 1); }), "beyond the largest finite float"));
  CHECK(contains(error_of([&] { sb::step_ulps(-max, -2); }), "perturb.ulps=-2"));
  CHECK(contains(error_of([&] { sb::step_ulps(0.0f, std::numeric_limits<int64_t>::max()); }), "beyond the largest"));
  CHECK(contains(error_of([&] { sb::step_ulps(0.0f, std::numeric_limits<int64_t>::min()); }), "beyond the largest"));
  CHECK(contains(error_of([&] { sb::step_ulps(std::numeric_limits<float>::infinity(), -1); }), "not a finite float"));
  CHECK(contains(error_of([&] { sb::step_ulps(std::numeric_limits<float>::quiet_NaN(), 1); }), "not a finite float"));
}

TEST_CASE("[perturb] keys: parsed, validated against the tensor table, and part of the experiment id") {
  const auto parse = [](std::vector<std::string> args) { return sb::cli::parse_config("", args); };
  const sb::Config c =
      parse({"--perturb.tensor", "h.0.attn.qkv.w", "--perturb.index=17", "--perturb.ulps=-3", "--perturb.step", "5"});
  CHECK(c.perturb.tensor == "h.0.attn.qkv.w");
  CHECK(c.perturb.index == 17);
  CHECK(c.perturb.ulps == -3);
  CHECK(c.perturb.step == 5);
  CHECK(sb::perturbation_text(c.perturb) == "h.0.attn.qkv.w[17] -3 ULPs before step 6 (after 5 steps)");
  CHECK(sb::perturbation_text(sb::PerturbConfig{}) == "off");

  const std::string unknown = error_of([&] { parse({"--perturb.tensor=h.9.attn.qkv.w"}); });
  CHECK(contains(unknown, "config perturb.tensor='h.9.attn.qkv.w' is not a tensor of this model"));
  CHECK(contains(unknown, "valid names: wte, wpe, h.0.ln1.w"));
  CHECK(contains(unknown, "lnf.b"));
  const std::string range = error_of([&] { parse({"--perturb.tensor=lnf.w", "--perturb.index=128"}); });
  CHECK(contains(range, "config perturb.index=128 is outside tensor lnf.w, which has 128 elements"));
  CHECK(contains(error_of([&] { parse({"--perturb.tensor=lnf.w", "--perturb.index=-1"}); }), "perturb.index=-1"));
  CHECK(contains(error_of([&] {
                   parse({"--perturb.tensor=wte", "--perturb.ulps=0"});
                 }),
                 "perturb.ulps=0 changes nothing"));
  CHECK(contains(error_of([&] {
                   parse({"--perturb.tensor=wte", "--perturb.step=300"});
                 }),
                 "perturb.step=300 must lie in [0, train.steps=300)"));
  CHECK(contains(error_of([&] { parse({"--perturb.index=4"}); }), "perturb.tensor is empty"));

  // Off: no [perturb] section in the experiment text, so existing ids stay; on: a new experiment.
  const sb::Config base = parse({});
  CHECK_FALSE(contains(sb::experiment_text(base), "[perturb]"));
  CHECK(contains(sb::to_ini_text(base), "\n[perturb]\ntensor =\nindex = 0\nulps = 1\nstep = 0\n"));
  CHECK(contains(sb::experiment_text(c), "\n[perturb]\ntensor = h.0.attn.qkv.w\nindex = 17\nulps = -3\nstep = 5\n"));
  CHECK(sb::experiment_id(c) != sb::experiment_id(base));
  sb::Config other_step = c;
  other_step.perturb.step = 6;
  CHECK(sb::experiment_id(other_step) != sb::experiment_id(c));
  // The resolved text parses back to the same config.
  sb::Config reseeded = c;
  reseeded.data.order_seed = 9;
  CHECK(contains(sb::experiment_text(reseeded), "\norder_seed = 9\n"));
  CHECK_FALSE(contains(sb::experiment_text(c), "order_seed"));
  CHECK(sb::cli::config_from_text(sb::to_ini_text(reseeded), {}) == reseeded);
}

TEST_CASE("the default experiment's id and bits are unchanged by [perturb] and data.order_seed") {
  const sb::Config c = tiny_config();
  // Recorded with `samebits train` (commit 8f8ea17) on this experiment.
  CHECK(sb::experiment_id(c) == "17f1670beeadd58b");
  const Series s = train(c, 8);
  const std::vector<uint32_t> loss{0x408455b5, 0x4085106d, 0x4084528c, 0x40840f81,
                                   0x4084196c, 0x4085a342, 0x4084aad0, 0x40852869};
  CHECK(s.loss == loss);
  const std::vector<uint64_t> last{
      0x2e972e6ba6acf81bull, 0xff07676c00309362ull, 0x6bc68a735aa978f3ull, 0x41ae0b37b16e2ffcull,
      0x3175db880628415eull, 0x0f77ccb1d84d8359ull, 0x46e012a38198dfc6ull, 0x571a141a6338ec8aull,
      0xc3c29f0b7fab0003ull, 0x92730689889dad21ull, 0x1f30d7585b477f35ull, 0x8b8d6491174b9fabull,
      0xc92239dff54a3312ull, 0xb3623d737decb788ull, 0x9df91d694186d50cull, 0x44ef8216db679e09ull};
  CHECK(s.params.back() == last);
}

TEST_CASE("apply_perturbation moves exactly one element by k ULPs") {
  sb::Config c = tiny_config();
  c.perturb = {"h.0.attn.qkv.w", 17, -2, 0};
  sb::Trainer t(c);
  const sb::GPT& m = t.model();
  const float* w = m.weights().data_as<float>();
  const std::vector<float> before(w, w + m.flat_size());
  const sb::PerturbationApplied applied = sb::apply_perturbation(c.perturb, t.model());
  const size_t flat = m.param("h.0.attn.qkv.w").offset + 17;
  CHECK(applied.flat == flat);
  CHECK(bits(applied.before) == bits(before[flat]));
  CHECK(bits(applied.after) == bits(sb::step_ulps(before[flat], -2)));
  size_t changed = 0;
  for (size_t i = 0; i < before.size(); ++i) changed += bits(before[i]) != bits(w[i]);
  CHECK(changed == 1);
  CHECK(bits(w[flat]) == bits(applied.after));
}

TEST_CASE("a 1-ULP perturbation after step 5: steps 1-5 identical, step 6 differs, applied once") {
  const sb::Config base = tiny_config();
  sb::Config perturbed = base;
  perturbed.perturb = {"h.0.attn.qkv.w", 17, 1, 5};
  const Series a = train(base, 8), b = train(perturbed, 8);
  for (int64_t k = 1; k <= 5; ++k) CHECK_MESSAGE(same_step(a, b, k), "step ", k);
  CHECK(a.params[5] != b.params[5]);  // step 6: the perturbed element is in the update's input
  CHECK(a.grads[5] != b.grads[5]);
  CHECK(a.params[7] != b.params[7]);

  // At step 0: the initial weights; the first step differs.
  sb::Config at_start = base;
  at_start.perturb = {"wte", 0, 1, 0};
  const Series c = train(at_start, 2);
  CHECK_FALSE(same_step(a, c, 1));
}

TEST_CASE("resume before, at and after the perturbation step equals the uninterrupted run") {
  sb::Config c = tiny_config();
  c.perturb = {"h.0.mlp.fc.w", 100, 1, 5};
  const Series whole = train(c, 8);
  for (const int64_t split : {3, 5, 6}) {
    CAPTURE(split);
    Series resumed;
    sb::TrainerState state;
    {
      sb::Trainer first(c);
      for (int64_t k = 0; k < split; ++k) record(resumed, first.step());
      state = first.export_state();
    }
    sb::Trainer second(c);
    second.import_state(state);
    while (!second.finished()) record(resumed, second.step());
    REQUIRE(resumed.loss.size() == 8);
    for (int64_t k = 1; k <= 8; ++k) CHECK_MESSAGE(same_step(whole, resumed, k), "step ", k);
  }
}

TEST_CASE("data.order_seed reorders the leaves only; train.seed reseeds the initialisation only") {
  const sb::Config base = tiny_config();
  sb::Config order = base;
  order.data.order_seed = 7;
  sb::Config init = base;
  init.train.seed = 2;
  sb::Trainer tb(base), to(order), ti(init);
  const size_t row = size_t(base.model.seq_len + 1);
  const auto leaf = [&](const sb::Trainer& t, uint64_t step, int l) {
    std::vector<int32_t> tokens(row);  // (leaf_size = 1, seq_len + 1)
    t.sampler().leaf(step, l, tokens.data());
    return tokens;
  };
  const auto weights = [](sb::Trainer& t) {
    const float* w = t.model().weights().data_as<float>();
    return std::vector<float>(w, w + t.model().flat_size());
  };
  const auto same_floats = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  CHECK(same_floats(weights(tb), weights(to)));
  CHECK_FALSE(same_floats(weights(tb), weights(ti)));
  CHECK(leaf(tb, 0, 0) == leaf(ti, 0, 0));
  CHECK(leaf(tb, 7, 3) == leaf(ti, 7, 3));
  const auto step_leaves = [&](const sb::Trainer& t, uint64_t step) {
    std::vector<std::vector<int32_t>> out;
    for (int l = 0; l < base.data.leaves; ++l) out.push_back(leaf(t, step, l));
    return out;
  };
  CHECK(step_leaves(tb, 0) != step_leaves(to, 0));
  // The validation set (the language) is unchanged: equal weights give equal validation loss.
  CHECK(bits(tb.evaluate()) == bits(to.evaluate()));
  // The same windows over the run (steps × leaves sequences), in another order.
  std::vector<std::vector<int32_t>> seen_base, seen_order;
  for (uint64_t s = 0; s < uint64_t(base.train.steps); ++s) {
    for (int l = 0; l < base.data.leaves; ++l) {
      seen_base.push_back(leaf(tb, s, l));
      seen_order.push_back(leaf(to, s, l));
    }
  }
  CHECK(seen_base != seen_order);
  std::sort(seen_base.begin(), seen_base.end());
  std::sort(seen_order.begin(), seen_order.end());
  CHECK(seen_base == seen_order);
}

TEST_CASE("SampleOrder: a finite source's epochs keyed by the seed; a generated source permuted per block") {
  const CountingSource finite(1000);
  const sb::data::Sampler plain(finite, 9, 1, 4, sb::data::SampleOrder{5, 0});
  const sb::data::Sampler blocked(finite, 9, 1, 4, sb::data::SampleOrder{5, 64});
  const sb::data::Sampler other(finite, 9, 1, 4, sb::data::SampleOrder{6, 0});
  const sb::data::Sampler legacy(finite, 9, 1, 4, uint64_t{5});
  bool differs = false;
  for (uint64_t k = 0; k < 300; ++k) {
    CHECK(blocked.window(k) == plain.window(k));  // the block applies to generated sources only
    CHECK(legacy.window(k) == plain.window(k));
    differs = differs || other.window(k) != plain.window(k);
  }
  CHECK(differs);

  sb::Config c = tiny_config();
  const auto generated =
      sb::data::open_source(sb::to_data_config(c), sb::data::Split::train, sb::io::isolated_hdf5_decoder());
  const sb::data::Sampler stream(*generated, 16, 1, 4, sb::data::SampleOrder{7, 0});
  const sb::data::Sampler permuted(*generated, 16, 1, 4, sb::data::SampleOrder{7, 10});
  for (uint64_t k = 0; k < 30; ++k) CHECK(stream.window(k) == k);
  for (uint64_t block = 0; block < 3; ++block) {
    std::vector<uint64_t> windows;
    for (uint64_t k = block * 10; k < block * 10 + 10; ++k) windows.push_back(permuted.window(k));
    std::vector<uint64_t> sorted = windows;
    std::sort(sorted.begin(), sorted.end());
    for (uint64_t i = 0; i < 10; ++i) CHECK(sorted[i] == block * 10 + i);
    bool moved = false;
    for (uint64_t i = 0; i < 10; ++i) moved = moved || windows[i] != block * 10 + i;
    CHECK(moved);
  }
  // The config's order: data.seed and no block by default; order_seed and the run's sequences.
  CHECK(sb::sample_order(c).seed == c.data.seed);
  CHECK(sb::sample_order(c).generated_block == 0);
  c.data.order_seed = 11;
  CHECK(sb::sample_order(c).seed == 11);
  CHECK(sb::sample_order(c).generated_block == 8 * 4 * 1);
}
