// [perturb] at every world size: `mpirun -np 2 samebits train` of a run perturbed after step 5
// (every rank perturbs its replica of the weights identically) records the one-process bits
// (diff exit 0), and differs from the unperturbed run from step 6. Skipped (exit 77) without
// MPI/mpirun in this build.
#include <doctest/doctest.h>

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"

using namespace sbt;

TEST_CASE("mpirun -np 2: a perturbed run has the one-process bits") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "pert.ini", tiny_config("snapshot_steps = 5, 6\n[perturb]\ntensor = h.0.mlp.fc.w\nindex = 3\n"
                                           "ulps = -1\nstep = 5\n"));
  REQUIRE(run({"train", "pert.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  write_text(dir / "base.ini", tiny_config("snapshot_steps = 5, 6\n"));
  REQUIRE(run({"train", "base.ini", "--out", "base.h5"}, SpawnOptions{0, d}).code == 0);

  const sb::test::Launch two = sb::test::mpirun_in(d, 2, samebits_binary() + " train pert.ini --out two.h5");
  REQUIRE_MESSAGE(two.exit_code == 0, two.output);

  const Result same = run({"diff", dir / "one.h5", dir / "two.h5"});
  CHECK_MESSAGE(same.code == 0, same.output);
  const Result apart = run({"diff", dir / "base.h5", dir / "two.h5"});
  CHECK(apart.code == 1);
  CHECK(apart.output.find("first divergent step 6") != std::string::npos);
}
