// numerics.gemm=exact under `mpirun`: -np 2 and 3 (data parallel), DP 1 × TP 2 and DP 2 × TP 2
// (the row-parallel products and the column-parallel dX summing the ranks' exact integer dots)
// and TP 2 in bf16 record the one-process bits (diff exit 0); canonical TP 2 is other numerics
// (diff exit 1). Skipped (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include "integration/layout_runs.hpp"

using namespace sbt;

namespace {

// A tiny GPT that 2-way tensor parallelism can split (4 heads), with an untied head over a
// vocabulary the group does not divide (the head's dX sums 31 + 30 columns' dots).
const char* kTensorParallel =
    "[model]\nvocab = 61\nseq_len = 16\nn_layer = 2\nn_head = 4\nn_embd = 32\n"
    "tied_head = false\n[data]\nleaf_size = 1\nleaves = 4\n"
    "[train]\nsteps = 4\nwarmup = 1\neval_every = 2\neval_leaves = 2\n"
    "[run]\nthreads = 1\nlog_every = 100\nprogress = off\n[numerics]\ngemm = exact\n";

}  // namespace

TEST_CASE("mpirun -np 2, 3: gemm=exact has the one-process bits") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "run.ini", tiny_config() + "[numerics]\ngemm = exact\n");
  REQUIRE(run({"train", "run.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  for (int ranks : {2, 3}) {
    const std::string out = "np" + std::to_string(ranks) + ".h5";
    const sb::test::Launch launch = sb::test::mpirun_in(d, ranks, samebits_binary() + " train run.ini --out " + out);
    REQUIRE_MESSAGE(launch.exit_code == 0, launch.output);
    const Result same = run({"diff", dir / "one.h5", dir / out});
    CHECK_MESSAGE(same.code == 0, ranks, " ranks: ", same.output);
  }
}

TEST_CASE("gemm=exact at TP 2 and DP 2 x TP 2 sums integer partials: the one-process bits") {
  TempDir dir;
  write_text(dir / "tp.ini", kTensorParallel);
  train_one(dir, "tp.ini", "one.h5", "");
  train_mpi_ok(dir, 2, "tp.ini", "--parallel.tp 2 --out tp2.h5");
  check_identical(dir, "one.h5", "tp2.h5");
  train_mpi_ok(dir, 4, "tp.ini", "--parallel.tp 2 --micro-leaves 1 --out dp2tp2.h5");
  check_identical(dir, "one.h5", "dp2tp2.h5");
  train_one(dir, "tp.ini", "one_bf16.h5", "--train.precision bf16");
  train_mpi_ok(dir, 2, "tp.ini", "--parallel.tp 2 --train.precision bf16 --out tp2_bf16.h5");
  check_identical(dir, "one_bf16.h5", "tp2_bf16.h5");
  train_mpi_ok(dir, 2, "tp.ini", "--parallel.tp 2 --numerics.gemm canonical --out canonical.h5");
  const Result other = run({"diff", dir / "tp2.h5", dir / "canonical.h5"});
  CHECK_MESSAGE(other.code == 1, other.output);
}
