// samebits trace between a one-process run and a run recorded under `mpirun -np N` (docs/TRACE.md):
// of the same deterministic config, exit 0 and every op of the traced step equal — the 3-rank run
// is replayed on 3 simulated ranks and its stream lines up with the one process's, row for row;
// under numerics.allreduce=native (a float SUM of the ranks' rounded partial sums) against 2 ranks,
// the origin is the gradient all-reduce's row; a PP 2 run (stages on simulated ranks that pass
// activations point to point) lines up with one process too. Skipped (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"

namespace {

using namespace sbt;

// `samebits train INI` for 4 steps into one.h5, then under `mpirun -np ranks` (with `layout`) into
// many.h5, in dir.
void train_one_and_many(const TempDir& dir, const std::string& ini, int ranks, const std::string& layout = "") {
  const std::string d = dir.path.string();
  REQUIRE(run({"train", ini, "--train.steps", "4", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  const sb::test::Launch many =
      sb::test::mpirun_in(d, ranks, samebits_binary() + " train " + ini + " --train.steps 4 --out many.h5 " + layout);
  REQUIRE_MESSAGE(many.exit_code == 0, many.output);
  const Result inspect = run({"inspect", dir / "many.h5"});
  REQUIRE_MESSAGE(inspect.output.find("world size " + std::to_string(ranks)) != std::string::npos, inspect.output);
}

}  // namespace

TEST_CASE("samebits trace: a 1-process run against an mpirun -np 3 run of one config: exit 0, every op equal") {
  TempDir dir;
  write_text(dir / "tiny.ini", tiny_config());
  train_one_and_many(dir, "tiny.ini", 3);
  for (const std::string step : {"1", "3"}) {
    const Result trace = run({"trace", dir / "one.h5", dir / "many.h5", "--step", step});
    CAPTURE(step);
    CHECK_MESSAGE(trace.code == 0, trace.output);
    CHECK(trace.output.find("every op equal") != std::string::npos);
    CHECK(trace.output.find("3 simulated ranks") != std::string::npos);
  }
}

TEST_CASE("samebits trace: allreduce=native on 1 process against mpirun -np 2: the origin is the all-reduce") {
  TempDir dir;
  write_text(dir / "native.ini", tiny_config("[numerics]\nallreduce = native\n"));
  train_one_and_many(dir, "native.ini", 2);
  const Result trace = run({"trace", dir / "one.h5", dir / "many.h5"});
  CHECK_MESSAGE(trace.code == 1, trace.output);
  CHECK_MESSAGE(trace.output.find(", allreduce gradient (leaf -") != std::string::npos, trace.output);
  CHECK(trace.output.find("its inputs are bitwise equal in both runs; its output differs") != std::string::npos);
  CHECK(trace.output.find("2 simulated ranks") != std::string::npos);
}

// Every leaf's forward and backward rows, stage by stage, are the one-process rows; the step's
// gradient ops then run over each stage's own tensors (docs/DISTRIBUTED.md §11, "Evidence"), which
// the replay does not line up with the whole model's yet: the sequences part at the first of them.
TEST_CASE("samebits trace: a 1-process run against PP 2 (a tied head): the leaves' ops equal, then the stages' own") {
  TempDir dir;
  std::string ini = tiny_config();
  ini.replace(ini.find("n_layer = 1"), 11, "n_layer = 2");
  write_text(dir / "pp.ini", ini);
  train_one_and_many(dir, "pp.ini", 2, "--parallel.pp 2");
  const Result trace = run({"trace", dir / "one.h5", dir / "many.h5", "--step", "3"});
  CHECK_MESSAGE(trace.code == 1, trace.output);
  CHECK(trace.output.find("divergence  none: the recorded runs are identical") != std::string::npos);
  CHECK_MESSAGE(trace.output.find("A runs allreduce gradient, B runs allreduce gradient") != std::string::npos,
                trace.output);
}
