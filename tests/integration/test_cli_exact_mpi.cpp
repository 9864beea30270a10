// numerics.gemm=exact under `mpirun -np 2` and `-np 3`: the one-process bits (diff exit 0). Skipped
// (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"

using namespace sbt;

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
