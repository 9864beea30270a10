// Tensor parallelism keeps the bits (docs/DISTRIBUTED.md §10): `mpirun -np N samebits train …
// --parallel.tp T` of a tiny GPT (2 layers, 4 heads) records what one process records — `samebits
// diff` IDENTICAL — at DP 1 × TP 2, DP 1 × TP 4 and DP 2 × TP 2, for Muon and AdamW, fp32 and
// bf16, with micro-leaves, with a vocabulary the group does not divide and an untied head, with SwiGLU MLPs and rotary
// positions, and with the distributed (ZeRO-1) optimizer across the DP group of DP 2 × TP 2; a run stopped at DP 2 × TP
// 2 resumes at DP 1 × TP 4 and in one process with the uninterrupted bits, one stopped there with the distributed
// optimizer also at DP 4 × TP 1 (sharded), and one stopped in one process resumes at DP 2 × TP 2 sharded; the sharded
// run's checkpoints hold the one-process content; optim.tp_mode = blockwise, distributed and distributed_exact move the
// bits from step 1 (the last two equal each other at TP 2; distributed keeps its bits at DP 2 with the distributed
// optimizer and across a resume); bad layouts exit 2 before any file is written. Skipped (exit 77) without mpirun or
// MPI in this build.
#include <doctest/doctest.h>

#include <cstdlib>

#include "integration/layout_runs.hpp"

namespace {

using namespace sbt;

const char* kConfig =
    "[model]\nvocab = 64\nseq_len = 16\nn_layer = 2\nn_head = 4\nn_embd = 32\n"
    "[data]\nleaf_size = 1\nleaves = 4\n"
    "[train]\nsteps = 6\nwarmup = 2\neval_every = 3\neval_leaves = 2\ncheckpoint_every = 3\n"
    "[run]\nthreads = 1\nlog_every = 100\nprogress = off\n";

sb::test::Launch train_mpi(const TempDir& dir, int ranks, const std::string& args) {
  return sbt::train_mpi(dir, ranks, "tp.ini", args);
}
void train_mpi_ok(const TempDir& dir, int ranks, const std::string& args) {
  sbt::train_mpi_ok(dir, ranks, "tp.ini", args);
}
void train_one(const TempDir& dir, const std::string& out, const std::string& args) {
  sbt::train_one(dir, "tp.ini", out, args);
}

// `samebits diff dup.h5 OTHER`'s first divergent step (0 when none is reported).
int first_divergent_step(const TempDir& dir, const std::string& other) {
  const Result d = run({"diff", dir / "dup.h5", dir / other});
  CHECK_MESSAGE(d.code == 1, d.output);
  const std::string key = "first divergent step ";
  const size_t at = d.output.find(key);
  return at == std::string::npos ? 0 : std::atoi(d.output.c_str() + at + key.size());
}

}  // namespace

TEST_CASE("DP x TP layouts record the one-process bits (Muon, AdamW; fp32, bf16; micro-leaves)") {
  TempDir dir;
  write_text(dir / "tp.ini", kConfig);
  struct Case {
    int ranks, tp;
    std::string numerics;  // the experiment's own keys, the same in the one-process run
    std::string execution;
  };
  const std::vector<Case> cases = {
      {2, 2, "", ""},
      {4, 4, "", ""},
      {4, 2, "", "--micro-leaves 1"},
      {2, 2, "--train.precision bf16", ""},
      {4, 2, "--optim.name adamw", ""},
      // The vocabulary split cut short (61 rows: 16, 16, 16, 13), an untied head split the same way.
      {4, 4, "--model.vocab 61 --model.tied_head false", ""},
      {4, 2, "", "--distributed-optimizer"},
      {4, 2, "--train.precision bf16", "--distributed-optimizer --micro-leaves 1"},
      {4, 2, "--optim.name adamw", "--distributed-optimizer"},
      {4, 2, "--model.vocab 61 --model.tied_head false", "--distributed-optimizer"},
      // SwiGLU: the gate's and the up projection's rows split alike, fc's k-chain in two blocks.
      {4, 4, "--model.mlp swiglu --model.ffn_dim 88 --model.norm rmsnorm --model.bias false", ""},
      {2, 2, "--model.mlp swiglu --model.ffn_dim 88 --train.precision bf16", "--micro-leaves 1"},
      {4, 2, "--model.pos rope --model.mlp swiglu --model.norm rmsnorm --model.bias false", "--distributed-optimizer"},
      // Grouped-query attention: each rank holds whole key/value heads with their query heads
      // (qkv's rows and proj's columns in blocks of heads); QK-norm's gains' chains pass rank to rank.
      {4, 2, "--model.n_kv_head 2 --model.pos rope --model.mlp swiglu --model.norm rmsnorm --model.bias false", ""},
      {4, 4, "--model.qk_norm true --model.pos rope", "--micro-leaves 1"},
      {4, 2, "--model.n_kv_head 2 --model.qk_norm true --train.precision bf16", "--distributed-optimizer"},
      {4, 2, "--model.n_kv_head 2 --model.qk_norm true --optim.name adamw", ""},
  };
  int k = 0;
  for (const Case& c : cases) {
    CAPTURE(c.ranks);
    CAPTURE(c.tp);
    CAPTURE(c.numerics);
    const std::string ref = "ref" + std::to_string(k) + ".h5", out = "tp" + std::to_string(k) + ".h5";
    ++k;
    train_one(dir, ref, c.numerics);
    const sb::test::Launch r = train_mpi(
        dir, c.ranks, "--parallel.tp " + std::to_string(c.tp) + " " + c.numerics + " " + c.execution + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    check_identical(dir, ref, out);
  }
  // The layout of the session is recorded (samebits inspect shows it).
  const Result inspect = run({"inspect", dir / "tp1.h5"});
  CHECK(inspect.output.find("dp 1 x tp 4") != std::string::npos);
}

TEST_CASE("a run stopped at DP 2 x TP 2 resumes at DP 1 x TP 4 and in one process, bitwise") {
  TempDir dir;
  write_text(dir / "tp.ini", kConfig);
  train_one(dir, "ref.h5", "");
  train_mpi_ok(dir, 4, "--parallel.tp 2 --out a.h5 --stop-after 4");
  copy_run(dir / "a.h5", dir / "b.h5");
  train_mpi_ok(dir, 4, "--parallel.tp 4 --out a.h5 --resume");
  train_one(dir, "b.h5", "--resume");
  check_identical(dir, "ref.h5", "a.h5");
  check_identical(dir, "ref.h5", "b.h5");
  const Result inspect = run({"inspect", dir / "a.h5"});
  CHECK(inspect.output.find("dp 2 x tp 2") != std::string::npos);
  CHECK(inspect.output.find("dp 1 x tp 4") != std::string::npos);
}

TEST_CASE("the distributed optimizer at DP 2 x TP 2: its checkpoints are one process's, resumed anywhere bitwise") {
  TempDir dir;
  write_text(dir / "tp.ini", kConfig);
  train_one(dir, "ref.h5", "");
  train_mpi_ok(dir, 4, "--parallel.tp 2 --distributed-optimizer --out whole.h5");
  // The state gathered over DP, then over TP: the full tensors, the one-process names and bits.
  CHECK(content_difference(dir / "ref.store/state_step_000006.h5", dir / "whole.store/state_step_000006.h5") == "");
  train_mpi_ok(dir, 4, "--parallel.tp 2 --distributed-optimizer --out a.h5 --stop-after 4");
  copy_run(dir / "a.h5", dir / "b.h5");
  copy_run(dir / "a.h5", dir / "c.h5");
  train_mpi_ok(dir, 4, "--parallel.tp 4 --out a.h5 --resume");
  train_mpi_ok(dir, 4, "--distributed-optimizer --out b.h5 --resume");
  train_one(dir, "c.h5", "--resume");
  // And back: stopped in one process, resumed at DP 2 x TP 2 with the distributed optimizer.
  train_one(dir, "d.h5", "--stop-after 4");
  train_mpi_ok(dir, 4, "--parallel.tp 2 --distributed-optimizer --out d.h5 --resume");
  for (const char* run : {"whole.h5", "a.h5", "b.h5", "c.h5", "d.h5"}) {
    CAPTURE(run);
    check_identical(dir, "ref.h5", run);
  }
}

TEST_CASE("optim.tp_mode blockwise, distributed and distributed_exact move the bits from step 1") {
  TempDir dir;
  write_text(dir / "tp.ini", kConfig);
  const sb::test::Launch dup = train_mpi(dir, 2, "--parallel.tp 2 --out dup.h5");
  REQUIRE_MESSAGE(dup.exit_code == 0, dup.output);
  for (const char* mode : {"blockwise", "distributed", "distributed_exact"}) {
    CAPTURE(mode);
    const std::string out = std::string(mode) + ".h5";
    const sb::test::Launch r =
        train_mpi(dir, 2, "--parallel.tp 2 --optim.tp_mode " + std::string(mode) + " --out " + out);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(first_divergent_step(dir, out) == 1);
  }
  // Two ranks: the float SUM of two partial Grams is their exact sum rounded once, so the two
  // distributed modes record the same bits (other experiments: the key differs).
  check_identical(dir, "distributed.h5", "distributed_exact.h5");
  // Data parallelism around it (with the distributed optimizer: each TP group updates its DP
  // rank's matrices, Newton–Schulz over the group) and a stop/resume keep distributed's bits (its
  // numerics depend on the TP group only).
  const sb::test::Launch dp2 =
      train_mpi(dir, 4, "--parallel.tp 2 --optim.tp_mode distributed --distributed-optimizer --out dp2.h5");
  REQUIRE_MESSAGE(dp2.exit_code == 0, dp2.output);
  check_identical(dir, "distributed.h5", "dp2.h5");
  const sb::test::Launch stop =
      train_mpi(dir, 2, "--parallel.tp 2 --optim.tp_mode distributed --out resumed.h5 --stop-after 4");
  REQUIRE_MESSAGE(stop.exit_code == 0, stop.output);
  const sb::test::Launch resume =
      train_mpi(dir, 2, "--parallel.tp 2 --optim.tp_mode distributed --out resumed.h5 --resume");
  REQUIRE_MESSAGE(resume.exit_code == 0, resume.output);
  check_identical(dir, "distributed.h5", "resumed.h5");
}

TEST_CASE("bad layouts: one error naming the key, exit 2, no file written") {
  TempDir dir;
  write_text(dir / "tp.ini", kConfig);
  const sb::test::Launch odd = train_mpi(dir, 3, "--parallel.tp 2 --out bad.h5");
  CHECK(odd.exit_code == 2);
  CHECK(odd.output.find("parallel.tp=2 does not divide the world of 3 ranks") != std::string::npos);
  const Result heads =
      run({"train", "tp.ini", "--parallel.tp", "3", "--out", "bad.h5"}, SpawnOptions{0, dir.path.string()});
  CHECK(heads.code == 2);
  CHECK(heads.output.find("model.n_head=4 is not divisible by parallel.tp=3") != std::string::npos);
  const Result alone =
      run({"train", "tp.ini", "--parallel.tp", "2", "--out", "bad.h5"}, SpawnOptions{0, dir.path.string()});
  CHECK(alone.code == 2);
  CHECK(alone.output.find("does not divide the world of 1 ranks") != std::string::npos);
  const sb::test::Launch qk = train_mpi(dir, 2, "--parallel.tp 2 --optim.qk_clip 50 --out bad.h5");
  CHECK(qk.exit_code == 2);
  CHECK(qk.output.find("parallel.tp=2 with optim.qk_clip") != std::string::npos);
  const sb::test::Launch vocab = train_mpi(dir, 4, "--parallel.tp 4 --model.vocab 3 --out bad.h5");
  CHECK(vocab.exit_code == 2);
  CHECK(vocab.output.find("model.vocab=3 leaves the last of parallel.tp=4 ranks no vocabulary row") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad.h5"));
  CHECK_FALSE(fs::exists(dir / "bad.store"));
}
