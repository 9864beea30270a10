// Pipeline parallelism keeps the bits (docs/DISTRIBUTED.md §11): `mpirun -np N samebits train …
// --parallel.pp P` of a tiny GPT (4 layers) records what one process records — `samebits diff`
// IDENTICAL — at PP 2 (1F1B and GPipe), PP 4, DP 2 × PP 2 with the distributed optimizer and
// DP 2 × TP 2 × PP 2, TP 2 × PP 3 (6 ranks, the middle stage passing the tied rows of its
// tensor-parallel rank's vocabulary) and TP 2 × PP 4 (8 ranks), for Muon and AdamW, fp32, bf16 and fp16, with
// micro-leaves, an untied head and QK-clip, and write the same final state file byte for byte (and the
// same snapshots, gathered under TP and PP); a run stopped at DP 2 ×
// TP 2 × PP 2 resumes in one process, at PP 4 and at DP 4 with the uninterrupted bits; `samebits verify` of a PP run
// re-runs it in one process; bad layouts exit 2 naming the key before any file is written. Skipped (exit 77) without
// mpirun or MPI in this build.
#include <doctest/doctest.h>

#include "integration/layout_runs.hpp"

namespace {

using namespace sbt;

const char* kConfig =
    "[model]\nvocab = 64\nseq_len = 8\nn_layer = 4\nn_head = 2\nn_embd = 16\n"
    "[data]\nleaf_size = 1\nleaves = 4\n"
    "[train]\nsteps = 4\nwarmup = 2\neval_every = 2\neval_leaves = 2\ncheckpoint_every = 2\n"
    "[run]\nthreads = 1\nlog_every = 100\nprogress = off\n";

sb::test::Launch train_mpi(const TempDir& dir, int ranks, const std::string& args) {
  return sbt::train_mpi(dir, ranks, "pp.ini", args);
}
void train_mpi_ok(const TempDir& dir, int ranks, const std::string& args) {
  sbt::train_mpi_ok(dir, ranks, "pp.ini", args);
}
void train_one(const TempDir& dir, const std::string& out, const std::string& args) {
  sbt::train_one(dir, "pp.ini", out, args);
}

}  // namespace

TEST_CASE("DP x TP x PP layouts record the one-process bits (Muon, AdamW; fp32, bf16, fp16; micro-leaves)") {
  TempDir dir;
  write_text(dir / "pp.ini", kConfig);
  struct Case {
    int ranks;
    std::string layout;    // execution: the same experiment
    std::string numerics;  // the experiment's own keys, the same in the one-process run
  };
  const std::vector<Case> cases = {
      {2, "--parallel.pp 2", ""},
      {2, "--parallel.pp 2 --parallel.pp_schedule gpipe", ""},
      {4, "--parallel.pp 4", ""},
      {4, "--parallel.pp 2 --distributed-optimizer", ""},
      {8, "--parallel.pp 2 --parallel.tp 2", ""},
      {6, "--parallel.pp 3 --parallel.tp 2", "--model.n_layer 6"},
      {8, "--parallel.pp 4 --parallel.tp 2", ""},
      {2, "--parallel.pp 2", "--train.precision bf16"},
      {2, "--parallel.pp 2", "--train.precision fp16"},
      {2, "--parallel.pp 2 --micro-leaves 1", "--optim.name adamw"},
      {4, "--parallel.pp 4 --parallel.pp_schedule gpipe", "--model.tied_head false --optim.qk_clip 0.5"},
      {4, "--parallel.pp 2 --parallel.tp 2", "--model.mlp swiglu --model.ffn_dim 40 --optim.name adamw"},
      {4, "--parallel.pp 4", "--model.pos rope --model.rope_theta 100 --model.tied_head false"},
      {4, "--parallel.pp 2 --parallel.tp 2",
       "--model.n_head 4 --model.n_kv_head 2 --model.qk_norm true --model.pos rope"},
  };
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.ranks);
    CAPTURE(c.layout);
    CAPTURE(c.numerics);
    const std::string ref = "ref" + std::to_string(k) + ".h5", out = "pp" + std::to_string(k) + ".h5";
    ++k;
    train_one(dir, ref, c.numerics);
    train_mpi_ok(dir, c.ranks, c.layout + " " + c.numerics + " --out " + out);
    check_identical(dir, ref, out);
    // The final state, written by rank 0 as it fetches each array from its stage, is the file one
    // process writes from its whole copy, byte for byte (optimizer state included).
    const std::string state = ".store/state_step_000004.h5";
    CHECK(read_bytes(dir / (ref.substr(0, ref.size() - 3) + state)) ==
          read_bytes(dir / (out.substr(0, out.size() - 3) + state)));
  }
  // The layout of the session is recorded, and verify re-runs a PP run in one process.
  const Result inspect = run({"inspect", dir / "pp4.h5"});
  CHECK(inspect.output.find("dp 2 x tp 2 x pp 2") != std::string::npos);
  const Result verify = run({"verify", dir / "pp2.h5"});
  CHECK_MESSAGE(verify.code == 0, verify.output);
}

TEST_CASE("a run stopped at DP 2 x TP 2 x PP 2 resumes in one process, at PP 4 and at DP 4, bitwise") {
  TempDir dir;
  write_text(dir / "pp.ini", kConfig);
  train_one(dir, "ref.h5", "");
  train_mpi_ok(dir, 8, "--parallel.tp 2 --parallel.pp 2 --out a.h5 --stop-after 3");
  copy_run(dir / "a.h5", dir / "b.h5");
  copy_run(dir / "a.h5", dir / "c.h5");
  train_one(dir, "a.h5", "--resume");
  train_mpi_ok(dir, 4, "--parallel.pp 4 --out b.h5 --resume");
  train_mpi_ok(dir, 4, "--out c.h5 --resume");
  for (const char* run : {"a.h5", "b.h5", "c.h5"}) {
    CAPTURE(run);
    check_identical(dir, "ref.h5", run);
  }
}

TEST_CASE("snapshots under TP and PP gather the full weights: one process's files, byte for byte") {
  TempDir dir;
  write_text(dir / "pp.ini", kConfig);
  // Steps 0, 1 and 3 gathered for the snapshot; step 2 served by its checkpoint.
  const std::string snapshots = "--train.snapshot_steps 0,1,2,3";
  train_one(dir, "ref.h5", snapshots);
  const std::vector<std::pair<int, std::string>> layouts = {
      {2, "--parallel.pp 2"}, {2, "--parallel.tp 2"}, {4, "--parallel.tp 2 --parallel.pp 2"}};
  for (size_t k = 0; k < layouts.size(); ++k) {
    CAPTURE(layouts[k].second);
    const std::string out = "s" + std::to_string(k);
    train_mpi_ok(dir, layouts[k].first, layouts[k].second + " " + snapshots + " --out " + out + ".h5");
    check_identical(dir, "ref.h5", out + ".h5");
    for (const char* file :
         {"snapshot_step_000000.h5", "snapshot_step_000001.h5", "state_step_000002.h5", "snapshot_step_000003.h5"}) {
      CAPTURE(file);
      const std::vector<char> mine = read_bytes(dir / (out + ".store/" + file));
      CHECK(!mine.empty());
      CHECK(mine == read_bytes(dir / ("ref.store/" + std::string(file))));
    }
  }
  // Positive control: two steps' snapshots differ.
  CHECK(read_bytes(dir / "ref.store/snapshot_step_000001.h5") != read_bytes(dir / "ref.store/snapshot_step_000003.h5"));
}

TEST_CASE("bad pipeline layouts: one error naming the key, exit 2, no file written") {
  TempDir dir;
  write_text(dir / "pp.ini", kConfig);
  const sb::test::Launch odd = train_mpi(dir, 3, "--parallel.pp 2 --out bad.h5");
  CHECK(odd.exit_code == 2);
  CHECK(odd.output.find("parallel.pp=2 does not divide the world of 3 ranks") != std::string::npos);
  const sb::test::Launch both = train_mpi(dir, 6, "--parallel.pp 2 --parallel.tp 2 --out bad.h5");
  CHECK(both.exit_code == 2);
  CHECK(both.output.find("parallel.tp=2 × parallel.pp=2 = 4 does not divide the world of 6 ranks") !=
        std::string::npos);
  const Result layers =
      run({"train", "pp.ini", "--parallel.pp", "3", "--out", "bad.h5"}, SpawnOptions{0, dir.path.string()});
  CHECK(layers.code == 2);
  CHECK(layers.output.find("model.n_layer=4 is not divisible by parallel.pp=3") != std::string::npos);
  const Result alone =
      run({"train", "pp.ini", "--parallel.pp", "2", "--out", "bad.h5"}, SpawnOptions{0, dir.path.string()});
  CHECK(alone.code == 2);
  CHECK(alone.output.find("parallel.pp=2 does not divide the world of 1 ranks") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad.h5"));
  CHECK_FALSE(fs::exists(dir / "bad.store"));
}
