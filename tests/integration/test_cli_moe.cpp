// experiments/configs/moe_tiny.ini end to end (a few steps, a shorter context): `samebits train`
// records one process's bits on 1, 2 and 4 threads, with one leaf per micro-batch and across a stop
// and resume; under `mpirun` at DP 2 and DP 4 (the distributed optimizer owning whole experts), at
// PP 2, DP 2 × PP 2, TP 2 (canonical and exact GEMMs), TP 2 × PP 2, DP 2 × TP 2 and TP 4 (SwiGLU
// experts), with Muon and AdamW, fp32 and bf16 — `samebits diff` IDENTICAL; the sigmoid
// router with a capacity limit and the auxiliary-loss-free bias likewise (its state resumed from the
// checkpoint); route flips and biases recorded, and no flip while the router cannot move; vendor
// numerics differ (the positive control); an expert width that tensor parallelism cannot split is
// refused by name before any file is written. Skipped (exit 77)
// without mpirun or MPI in this build for the MPI part.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "integration/layout_runs.hpp"
#include "integration/moe_runs.hpp"
#include "integration/test_damaged_files.hpp"
#include "samebits/core/io/run_file.hpp"

using namespace sbt;

namespace {

const std::string kPreset = kMoePreset;
// Every rank count up to 4 divides the leaves.
const std::string kShort = moe_short(2);

void train(const TempDir& dir, const std::string& out, const std::string& args) {
  train_one(dir, kPreset, out, kShort + " " + args);
}

}  // namespace

TEST_CASE("moe_tiny.ini: identical on 1, 2 and 4 threads, micro-leaves and resume; vendor numerics differ") {
  TempDir dir;
  int variant = 0;
  for (const std::string model :
       {"", "--model.moe_router sigmoid --model.moe_capacity 1 --model.moe_every 2 --model.moe_bias_rate 0.001"}) {
    CAPTURE(model);
    const std::string v = std::to_string(variant++), ref = "ref" + v + ".h5";
    train(dir, ref, model + " --run.threads 1");
    {  // The routing series: every block's selections sum to the step's tokens × top-k.
      const sb::run::RunReader r = sb::run::RunReader::open(dir / ref);
      const int blocks = variant == 1 ? 4 : 2, experts = 8;
      const std::vector<int64_t> tokens = r.series<int64_t>("series/moe_tokens");
      const std::vector<double> aux = r.series<double>("series/moe_aux_loss"),
                                entropy = r.series<double>("series/moe_entropy");
      REQUIRE(tokens.size() == size_t(4 * blocks * experts));
      REQUIRE(entropy.size() == size_t(4 * blocks));
      const std::vector<int64_t> flips = r.series<int64_t>("series/moe_route_flips");
      const std::vector<float> bias = r.series<float>("series/moe_bias");
      REQUIRE(flips.size() == size_t(4 * blocks));
      REQUIRE(bias.size() == tokens.size());
      for (int64_t f : flips) CHECK((f >= 0 && f <= 4 * 2 * 32));  // of the step's tokens
      CHECK(*std::max_element(flips.begin(), flips.end()) > 0);
      // The bias moves by ±0.001 a step toward the mean load (the sigmoid variant), else stays 0.
      const float most = *std::max_element(bias.begin(), bias.end()),
                  least = *std::min_element(bias.begin(), bias.end());
      if (variant == 1) CHECK((most == 0.0f && least == 0.0f));
      else CHECK((most > 0.0f && least < 0.0f && most <= 0.0041f && least >= -0.0041f));
      for (int row = 0; row < 4 * blocks; ++row) {
        int64_t sum = 0;
        for (int e = 0; e < experts; ++e) sum += tokens[size_t(row * experts + e)];
        CHECK(sum == 4 * 2 * 32 * 2);  // leaves × sequences × tokens × top-k
        CHECK(aux[size_t(row)] > 0.0);
        CHECK(entropy[size_t(row)] > 0.0);
        CHECK(entropy[size_t(row)] <= std::log(8.0) + 1e-6);
      }
    }
    for (const std::string threads : {"2", "4"}) {
      train(dir, "threads" + threads + "_" + v + ".h5", model + " --run.threads " + threads);
      check_identical(dir, ref, "threads" + threads + "_" + v + ".h5");
    }
    train(dir, "micro" + v + ".h5", model + " --run.threads 2 --micro-leaves 1");
    check_identical(dir, ref, "micro" + v + ".h5");
    train(dir, "resumed" + v + ".h5", model + " --stop-after 2");
    train(dir, "resumed" + v + ".h5", model + " --resume");
    check_identical(dir, ref, "resumed" + v + ".h5");
    train(dir, "vendor" + v + ".h5", model + " --numerics.mode vendor");
    CHECK(run({"diff", dir / ref, dir / ("vendor" + v + ".h5")}).code == 1);
  }
}

TEST_CASE("an MoE run file without one of its routing series, or with one of the wrong width, is refused by name") {
  TempDir dir;
  train(dir, "moe.h5", "--run.threads 2");
  const struct {
    const char* what;
    const char* named;
    std::function<void(sb::h5::File&)> edit;
  } cases[] = {
      {"moe_entropy missing", "series/moe_entropy", [](sb::h5::File& f) { f.remove("series/moe_entropy"); }},
      {"moe_tokens of 3 columns", "series/moe_tokens",
       [](sb::h5::File& f) {
         f.remove("series/moe_tokens");
         f.create_dataset("series/moe_tokens", sb::h5::DType::i64, {4, 3});
       }},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string path = dir / ("bad" + std::to_string(n++) + ".h5");
    sbt::edited_copy(dir / "moe.h5", path, c.edit);
    CHECK_THROWS_WITH_AS(sb::run::RunReader::open(path), doctest::Contains(c.named), sb::Error);
    const Result r = run({"inspect", path});
    CHECK_MESSAGE(r.code == 2, c.what, ": ", describe(r));
  }
}

TEST_CASE("moe_tiny.ini under mpirun: DP, TP, PP and the distributed optimizer record one process's bits") {
  TempDir dir;
  struct Case {
    int ranks;
    std::string layout, numerics;
  };
  const std::vector<Case> cases = {
      {2, "", ""},
      {4, "--distributed-optimizer", ""},
      {2, "--distributed-optimizer", "--optim.name adamw"},
      {2, "", "--train.precision bf16"},
      {2, "--parallel.pp 2", ""},
      {4, "--parallel.pp 2 --distributed-optimizer",
       "--model.moe_router sigmoid --model.moe_capacity 1 --model.moe_bias_rate 0.001"},
      {2, "--parallel.tp 2", ""},
      {2, "--parallel.tp 2", "--numerics.gemm exact"},
      {4, "--parallel.tp 2 --parallel.pp 2", "--train.precision bf16"},
      {4, "--parallel.tp 2 --distributed-optimizer", "--optim.name adamw"},
      {4, "--parallel.tp 4",
       "--model.mlp swiglu --model.moe_router sigmoid --model.moe_bias_rate 0.001 --model.moe_capacity 1"},
  };
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.ranks);
    CAPTURE(c.layout);
    CAPTURE(c.numerics);
    const std::string ref = "ref" + std::to_string(k) + ".h5", out = "mpi" + std::to_string(k) + ".h5";
    ++k;
    train(dir, ref, c.numerics + " --run.threads 1");
    const sb::test::Launch r =
        train_mpi(dir, c.ranks, kPreset, kShort + " --run.threads 1 " + c.layout + " " + c.numerics + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    check_identical(dir, ref, out);
  }
  // An expert width the tensor-parallel ranks cannot split: refused by name, no run file.
  const sb::test::Launch tp =
      train_mpi(dir, 2, kPreset, kShort + " --run.threads 1 --parallel.tp 2 --model.moe_ffn_dim 175 --out tp.h5");
  CHECK(tp.exit_code == 2);
  CHECK(tp.output.find("model.moe_ffn_dim=175 is not divisible by parallel.tp=2") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "tp.h5"));
}

TEST_CASE("route flips count the tokens the update re-routes: none when the router cannot move") {
  TempDir dir;
  // AdamW's step at lr 1e-30 rounds away (no weight decay in the preset): the routers keep their
  // bits while Muon trains the experts, so each kept input routes as it did in the forward.
  train(dir, "frozen.h5", "--run.threads 2 --optim.adam_lr 1e-30");
  const sb::run::RunReader r = sb::run::RunReader::open(dir / "frozen.h5");
  const std::vector<int64_t> flips = r.series<int64_t>("series/moe_route_flips");
  REQUIRE(flips.size() == 4 * 4);
  CHECK(std::all_of(flips.begin(), flips.end(), [](int64_t f) { return f == 0; }));
  const std::vector<uint64_t> fingerprints = r.series<uint64_t>("series/param_fingerprint");
  const size_t tensors = r.tensors().size();
  size_t routers = 0;
  for (size_t t = 0; t < tensors; ++t) {
    if (r.tensors()[t].name.find("moe.router.w") == std::string::npos) continue;
    ++routers;
    CHECK(fingerprints[t] == fingerprints[3 * tensors + t]);  // step 1's router is step 4's
  }
  CHECK(routers == 4);
  const std::vector<float> loss = r.series<float>("series/loss");
  CHECK(loss.back() < loss.front());  // the experts did train
}

TEST_CASE(
    "moe_tiny.ini: one expert weight moved 1 ULP at TP 2 is one process's perturbed run; samebits trace names "
    "that expert's op") {
  TempDir dir;
  const std::string ulp =
      " --perturb.tensor h.1.moe.e3.fc.w --perturb.index 5000 --perturb.ulps 1 --perturb.step 2 --run.threads 1";
  train(dir, "one.h5", "--run.threads 1");
  train(dir, "one_ulp.h5", ulp);
  const sb::test::Launch tp = train_mpi(dir, 2, kPreset, kShort + " --parallel.tp 2 --run.threads 1 --out tp.h5");
  REQUIRE_MESSAGE(tp.exit_code == 0, tp.output);
  const sb::test::Launch tp_ulp = train_mpi(dir, 2, kPreset, kShort + " --parallel.tp 2" + ulp + " --out tp_ulp.h5");
  REQUIRE_MESSAGE(tp_ulp.exit_code == 0, tp_ulp.output);
  check_identical(dir, "one_ulp.h5", "tp_ulp.h5");  // element 5000 lies in rank 1's shard (rows 88..175)
  check_expert_trace(dir, "one.h5", "tp.h5", "tp_ulp.h5");
}

TEST_CASE("forced router ties (every router weight zero, so every logit equal) pick experts 0 and 1 on every layout") {
  TempDir dir;
  train(dir, "seed.h5", "--run.threads 1");
  const std::string zeros = zeroed_routers(dir, "seed.h5");  // step 1 routes each token by a tie of all 8
  const std::string init = " --init " + zeros + " --run.threads 1";
  train(dir, "one.h5", init);
  const std::vector<int64_t> tokens = sb::run::RunReader::open(dir / "one.h5").series<int64_t>("series/moe_tokens");
  for (int block = 0; block < 4; ++block) {  // step 1: all 4 · 2 · 32 tokens on experts 0 and 1
    CAPTURE(block);
    for (int e = 0; e < 8; ++e) CHECK(tokens[size_t(block * 8 + e)] == (e < 2 ? 256 : 0));
  }
  int k = 0;
  for (const std::string layout : {"", "--parallel.tp 2", "--parallel.pp 2"}) {
    CAPTURE(layout);
    const std::string out = "layout" + std::to_string(k++) + ".h5";
    const sb::test::Launch r = train_mpi(dir, 2, kPreset, kShort + init + " " + layout + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    check_identical(dir, "one.h5", out);
  }
}
