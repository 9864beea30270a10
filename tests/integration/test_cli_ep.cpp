// Expert parallelism (parallel.ep, docs/DISTRIBUTED.md §12) end to end on moe_tiny.ini (a shorter
// context): under `mpirun` at EP 2, EP 4, DP 2 × EP 2 with the distributed optimizer, EP 2 × TP 2,
// EP 2 × PP 2 and EP 2 × TP 2 × PP 2 (8 oversubscribed ranks), with Muon and AdamW, fp32 and bf16,
// the sigmoid router with a capacity limit and the auxiliary-loss-free bias, threads and
// micro-leaves — `samebits diff` against one process IDENTICAL; a run stopped at EP 4 resumes in
// one process with the same bits; `samebits trace` replays one process at EP 2 (every op equal)
// and names the expert op a 1-ULP move of one expert weight reaches first; forced router ties pick
// the lower experts at EP 2 and EP 4; the all-to-all moves the rows it should (bytes per step);
// layouts that split neither the experts nor the world are refused by name before any file is
// written (the positive control: vendor GEMMs at EP 2 differ). Skipped (exit 77) without mpirun or
// MPI in this build.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "integration/layout_runs.hpp"
#include "integration/moe_runs.hpp"
#include "samebits/core/io/run_file.hpp"

using namespace sbt;

namespace {

const std::string kPreset = kMoePreset;
// Every data-parallel size up to 4 divides the leaves and the validation leaves, as expert
// parallelism's lockstep needs.
const std::string kShort = moe_short(4);

// kShort without the options `args` gives itself (a key may be given once).
std::string short_with(const std::string& args) {
  std::istringstream in(kShort);
  std::string key, value, out;
  while (in >> key >> value)
    if (args.find(key + " ") == std::string::npos) out += " " + key + " " + value;
  return out + " " + args;
}

void train(const TempDir& dir, const std::string& out, const std::string& args) {
  train_one(dir, kPreset, out, short_with(args));
}

sb::test::Launch train_ep(const TempDir& dir, int ranks, const std::string& args) {
  return train_mpi(dir, ranks, kPreset, short_with(args));
}

}  // namespace

TEST_CASE("moe_tiny.ini under mpirun at EP 2, EP 4, DP 2 x EP 2, EP 2 x TP 2 and EP 2 x PP 2: one process's bits") {
  TempDir dir;
  struct Case {
    int ranks;
    std::string layout, numerics;
  };
  const std::string sigmoid = "--model.moe_router sigmoid --model.moe_capacity 1 --model.moe_bias_rate 0.001";
  const std::vector<Case> cases = {
      {2, "--parallel.ep 2", ""},
      {2, "--parallel.ep 2", "--optim.name adamw"},
      {2, "--parallel.ep 2", "--train.precision bf16"},
      {2, "--parallel.ep 2 --run.threads 2 --micro-leaves 1", sigmoid},
      {4, "--parallel.ep 4", ""},
      {4, "--parallel.ep 2 --distributed-optimizer", ""},
      {4, "--parallel.ep 2 --distributed-optimizer", "--optim.name adamw " + sigmoid},
      {4, "--parallel.ep 2 --parallel.tp 2", ""},
      {4, "--parallel.ep 2 --parallel.pp 2", "--model.mlp swiglu"},
      {4, "--parallel.ep 2 --parallel.pp 2 --distributed-optimizer", "--optim.name adamw --train.precision bf16"},
      {8, "--parallel.ep 2 --parallel.tp 2 --parallel.pp 2 --distributed-optimizer", ""},
  };
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.ranks);
    CAPTURE(c.layout);
    CAPTURE(c.numerics);
    const std::string ref = "ref" + std::to_string(k) + ".h5", out = "ep" + std::to_string(k) + ".h5";
    ++k;
    train(dir, ref, c.numerics + " --run.threads 1");
    const std::string threads = c.layout.find("--run.threads") == std::string::npos ? "--run.threads 1 " : "";
    const sb::test::Launch r = train_ep(dir, c.ranks, threads + c.layout + " " + c.numerics + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    check_identical(dir, ref, out);
  }
  // The run file names the layout; vendor numerics at EP 2 are not one process's bits.
  const Result inspect = run({"inspect", dir / "ep0.h5"});
  CHECK(inspect.output.find("dp 2 x tp 1 x ep 2") != std::string::npos);
  const sb::test::Launch vendor = train_ep(dir, 2, "--parallel.ep 2 --numerics.gemm vendor --out vendor.h5");
  REQUIRE_MESSAGE(vendor.exit_code == 0, vendor.output);
  CHECK(run({"diff", dir / "ref0.h5", dir / "vendor.h5"}).code == 1);
}

TEST_CASE("parallel.ep that divides neither the experts nor the data-parallel ranks is refused by name, no file") {
  TempDir dir;
  const struct {
    int ranks;
    std::string args, message;
  } cases[] = {
      {3, "--parallel.ep 3", "parallel.ep=3 does not divide model.moe_experts=8"},
      {2, "--parallel.ep 4", "parallel.ep=4 does not divide the 2 data-parallel ranks"},
      {2, "--parallel.ep 2 --parallel.tp 2", "parallel.ep=2 does not divide the 1 data-parallel ranks"},
      {2, "--parallel.ep 2 --data.leaves 3", "data.leaves=3 is not a multiple of the 2 data-parallel ranks"},
      {2, "--parallel.ep 2 --model.moe_experts 0", "model.moe_experts=0"},
  };
  int k = 0;
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const std::string out = "bad" + std::to_string(k++) + ".h5";
    const sb::test::Launch r = train_ep(dir, c.ranks, c.args + " --out " + out);
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find(c.message) != std::string::npos, r.output);
    CHECK_FALSE(std::filesystem::exists(dir / out));
  }
}

TEST_CASE("a run stopped at EP 4 after 3 steps resumes in one process with one process's bits") {
  TempDir dir;
  train(dir, "one.h5", "--train.checkpoint_every 3 --run.threads 1");
  const sb::test::Launch stopped =
      train_ep(dir, 4, "--parallel.ep 4 --train.checkpoint_every 3 --stop-after 3 --run.threads 1 --out resumed.h5");
  REQUIRE_MESSAGE(stopped.exit_code == 0, stopped.output);
  train(dir, "resumed.h5", "--train.checkpoint_every 3 --run.threads 2 --resume");
  check_identical(dir, "one.h5", "resumed.h5");
}

TEST_CASE("samebits trace: one process against EP 2 is every op equal; one expert weight moved 1 ULP is named") {
  TempDir dir;
  const std::string ulp =
      " --perturb.tensor h.1.moe.e3.fc.w --perturb.index 5000 --perturb.ulps 1 --perturb.step 2 --run.threads 1";
  train(dir, "one.h5", "--run.threads 1");
  const sb::test::Launch ep = train_ep(dir, 2, "--parallel.ep 2 --run.threads 1 --out ep.h5");
  REQUIRE_MESSAGE(ep.exit_code == 0, ep.output);
  const sb::test::Launch ep_ulp = train_ep(dir, 2, "--parallel.ep 2" + ulp + " --out ep_ulp.h5");
  REQUIRE_MESSAGE(ep_ulp.exit_code == 0, ep_ulp.output);
  train(dir, "one_ulp.h5", ulp);
  check_identical(dir, "one_ulp.h5", "ep_ulp.h5");  // expert 3 lives on EP rank 0 (experts 0..3)
  check_expert_trace(dir, "one.h5", "ep.h5", "ep_ulp.h5");
}

TEST_CASE("forced router ties pick experts 0 and 1 at EP 2 and EP 4; the all-to-all carries each routed row twice") {
  TempDir dir;
  train(dir, "seed.h5", "--run.threads 1");
  const std::string zeros = zeroed_routers(dir, "seed.h5");
  const std::string init = " --init " + zeros + " --run.threads 1 --train.steps 1 --train.eval_every 0";
  train(dir, "one.h5", init);
  const std::vector<int64_t> tokens = sb::run::RunReader::open(dir / "one.h5").series<int64_t>("series/moe_tokens");
  for (int block = 0; block < 4; ++block) {  // every token of the step on experts 0 and 1
    CAPTURE(block);
    for (int e = 0; e < 8; ++e) CHECK(tokens[size_t(block * 8 + e)] == (e < 2 ? 256 : 0));
  }
  for (const int ep : {2, 4}) {
    CAPTURE(ep);
    const std::string out = "ep" + std::to_string(ep) + ".h5";
    const sb::test::Launch r = train_ep(dir, ep, init + " --parallel.ep " + std::to_string(ep) + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    check_identical(dir, "one.h5", out);
    // Every routed row lives on EP rank 0 (experts 0 and 1): rank 0 sends the other ranks' rows
    // back, their outputs in the forward and their input gradients in the backward — per block
    // 2 · (ranks − 1) · 4/ep leaves · 2 · 32 tokens · top-2 rows of 128 floats, and per leaf one
    // header of 8/ep + 1 counts to each other rank. Nothing else is sent point to point at EP alone.
    const sb::run::RunReader run_file = sb::run::RunReader::open(dir / out);
    const std::vector<uint64_t> bytes = run_file.series<uint64_t>("series/comm_bytes");
    const uint64_t rows = uint64_t(ep - 1) * (4 / uint64_t(ep)) * 2 * 32 * 2;
    const uint64_t header = (4 / uint64_t(ep)) * uint64_t(ep - 1) * (8 / uint64_t(ep) + 1) * 8;
    CHECK(bytes[9] == 4 * (2 * rows * 128 * 4 + header));  // column 9: send (docs/FORMAT.md)
  }
}
