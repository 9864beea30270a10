// samebits trace between a one-process run and a run recorded under `mpirun -np 3` of the same
// deterministic config (docs/TRACE.md): exit 0, every op of the traced step equal — the 3-rank
// run is replayed on 3 simulated ranks and its stream lines up with the one process's, row for
// row. Skipped (exit 77) without mpirun or without MPI in this build.
#include <doctest/doctest.h>

#include <cstdlib>

#include "integration/test_cli_support.hpp"
#include "support/skip.hpp"

namespace {

using namespace sbt;

std::string mpirun() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

}  // namespace

TEST_CASE("samebits trace: a 1-process run against an mpirun -np 3 run of one config: exit 0, every op equal") {
  const std::string launcher = mpirun();
  if (launcher.empty()) sb::test::skip("no mpirun");
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "tiny.ini", tiny_config());
  REQUIRE(run({"train", "tiny.ini", "--train.steps", "4", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);

  std::string command = launcher + " --oversubscribe --bind-to none -np 3";
  if (::geteuid() == 0) command += " --allow-run-as-root";
  command += " " + samebits_binary() + " train tiny.ini --train.steps 4 --out three.h5 > mpi.log 2>&1";
  const int status = std::system(("cd '" + d + "' && ASAN_OPTIONS=detect_leaks=0 " + command).c_str());
  std::ifstream log(dir / "mpi.log");
  const std::string output((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (output.find("built without MPI") != std::string::npos) sb::test::skip("samebits was built without MPI");
  REQUIRE_MESSAGE(WIFEXITED(status), output);
  REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, output);

  const Result inspect = run({"inspect", dir / "three.h5"});
  REQUIRE_MESSAGE(inspect.output.find("world size 3") != std::string::npos, inspect.output);
  for (const std::string step : {"1", "3"}) {
    const Result trace = run({"trace", dir / "one.h5", dir / "three.h5", "--step", step});
    CAPTURE(step);
    CHECK_MESSAGE(trace.code == 0, trace.output);
    CHECK(trace.output.find("every op equal") != std::string::npos);
    CHECK(trace.output.find("3 simulated ranks") != std::string::npos);
  }
}
