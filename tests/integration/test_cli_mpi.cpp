// `mpirun -np N samebits train` (docs/DISTRIBUTED.md): rank 0 writes the run file, and its every
// recorded bit equals a one-process run's (diff exit 0); a run stopped at 2 ranks resumes at 3,
// and one killed under mpirun resumes in one process, both to the one-process result. With
// --distributed-optimizer (the exact reduce-scatter, owner-side statistics and clip) at 2-4 ranks,
// micro-leaves 0/1/2, clipping on every step and a 2 -> 3 -> 1 rank resume: the same bits; and
// with QK-clip (the ranks' maxima merged) at 2 and 3 ranks, its series included.
// Skipped (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include <algorithm>

#include "samebits/core/parallel/communicator.hpp"

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"

namespace {

using namespace sbt;

// mpirun -np N samebits ARGS…, in `dir`.
sb::test::Launch mpi(int ranks, const std::string& dir, const std::vector<std::string>& args) {
  std::string command = samebits_binary();
  for (const std::string& a : args) command += " " + a;
  return sb::test::mpirun_in(dir, ranks, command);
}

}  // namespace

TEST_CASE("mpirun samebits train: the one-process bits at 2 ranks, and a 2 -> 3 rank resume") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "run.ini", tiny_config("checkpoint_every = 5\nsnapshot_steps = 10\n"));
  REQUIRE(run({"train", "run.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);

  const sb::test::Launch two = mpi(2, d, {"train", "run.ini", "--out", "two.h5"});
  REQUIRE_MESSAGE(two.exit_code == 0, two.output);
  CHECK(two.output.find("run two.h5 finished: 20 steps") != std::string::npos);
  const Result same = run({"diff", dir / "one.h5", dir / "two.h5"});
  CHECK_MESSAGE(same.code == 0, same.output);
  const Result inspect = run({"inspect", dir / "two.h5"});
  CHECK(inspect.output.find("mpi (2 ranks), world size 2") != std::string::npos);

  const sb::test::Launch stopped = mpi(2, d, {"train", "run.ini", "--out", "el.h5", "--stop-after", "7"});
  REQUIRE_MESSAGE(stopped.exit_code == 0, stopped.output);
  const sb::test::Launch resumed = mpi(3, d, {"train", "run.ini", "--out", "el.h5", "--resume"});
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  CHECK(resumed.output.find("at step 7 (from checkpoint el.store/state_step_000007.h5)") != std::string::npos);
  const Result elastic = run({"diff", dir / "one.h5", dir / "el.h5"});
  CHECK_MESSAGE(elastic.code == 0, elastic.output);
}

TEST_CASE("mpirun samebits train with optim.qk_clip: the one-process run file, QK-clip series included") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "run.ini", tiny_config() + "[optim]\nqk_clip = 0.02\n");
  REQUIRE(run({"train", "run.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  for (int ranks : {2, 3}) {
    const std::string out = "np" + std::to_string(ranks) + ".h5";
    const sb::test::Launch r = mpi(ranks, d, {"train", "run.ini", "--out", out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    const Result same = run({"diff", dir / "one.h5", dir / out});  // every experiment column, bitwise
    CHECK_MESSAGE(same.code == 0, same.output);
  }
  const sb::h5::File f = sb::h5::File::open(dir / "np3.h5");
  CHECK(f.dataset("series/qk_max_logit").shape() == sb::h5::Dims{20, 2});
}

namespace {

// Σ over the run's steps of series/comm_calls' column `kind` (the collectives of each step).
uint64_t calls_of(const std::string& path, sb::Collective kind) {
  const sb::h5::File f = sb::h5::File::open(path);
  const std::vector<uint64_t> calls = f.dataset("series/comm_calls").read<uint64_t>();
  uint64_t total = 0;
  for (size_t i = static_cast<size_t>(kind); i < calls.size(); i += sb::kCollectiveKinds) total += calls[i];
  return total;
}

// The smallest clip_scale of the run (below 1: clipping acted).
float smallest_clip(const std::string& path) {
  const std::vector<float> c = sb::h5::File::open(path).dataset("series/clip_scale").read<float>();
  return c.empty() ? 1.0f : *std::min_element(c.begin(), c.end());
}

}  // namespace

TEST_CASE("mpirun samebits train --distributed-optimizer: the reduce-scattered gradient has the one-process bits") {
  TempDir dir;
  const std::string d = dir.path.string();
  // optim.clip small enough that every step clips: the owners' exact norm and their multiplies.
  write_text(dir / "run.ini", tiny_config("checkpoint_every = 5\n[optim]\nclip = 0.05\n"));
  REQUIRE(run({"train", "run.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  CHECK(smallest_clip(dir / "one.h5") < 1.0f);
  const sb::test::Launch plain = mpi(2, d, {"train", "run.ini", "--out", "ar2.h5"});
  REQUIRE_MESSAGE(plain.exit_code == 0, plain.output);
  CHECK(calls_of(dir / "ar2.h5", sb::Collective::reduce_scatter) == 0);
  const struct {
    int ranks;
    const char* micro;
  } cells[] = {{2, "0"}, {3, "1"}, {4, "2"}};
  for (const auto& c : cells) {
    CAPTURE(c.ranks);
    const std::string out = "rs" + std::to_string(c.ranks) + ".h5";
    const sb::test::Launch r =
        mpi(c.ranks, d, {"train", "run.ini", "--out", out, "--distributed-optimizer", "--micro-leaves", c.micro});
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(calls_of(dir / out, sb::Collective::reduce_scatter) == 20);  // one per step
    const Result same = run({"diff", dir / "one.h5", dir / out});
    CHECK_MESSAGE(same.code == 0, same.output);
    const Result as_allreduce = run({"diff", dir / "ar2.h5", dir / out});
    CHECK_MESSAGE(as_allreduce.code == 0, as_allreduce.output);
  }
  // Stopped at 2 sharded ranks, resumed at 3 sharded, then finished in one process.
  const sb::test::Launch stopped =
      mpi(2, d, {"train", "run.ini", "--out", "el.h5", "--distributed-optimizer", "--stop-after", "7"});
  REQUIRE_MESSAGE(stopped.exit_code == 0, stopped.output);
  const sb::test::Launch resumed =
      mpi(3, d, {"train", "run.ini", "--out", "el.h5", "--distributed-optimizer", "--resume", "--stop-after", "13"});
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  REQUIRE(run({"train", "run.ini", "--out", "el.h5", "--resume"}, SpawnOptions{0, d}).code == 0);
  const Result elastic = run({"diff", dir / "one.h5", dir / "el.h5"});
  CHECK_MESSAGE(elastic.code == 0, elastic.output);
}
