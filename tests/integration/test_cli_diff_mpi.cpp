// [perturb] at every world size: `mpirun -np 2 samebits train` of a run perturbed after step 5
// (every rank perturbs its replica of the weights identically) records the one-process bits
// (diff exit 0), and differs from the unperturbed run from step 6. Skipped (exit 77) without
// mpirun or without MPI in this build.
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

TEST_CASE("mpirun -np 2: a perturbed run has the one-process bits") {
  const std::string launcher = mpirun();
  if (launcher.empty()) sb::test::skip("no mpirun");
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "pert.ini", tiny_config("snapshot_steps = 5, 6\n[perturb]\ntensor = h.0.mlp.fc.w\nindex = 3\n"
                                           "ulps = -1\nstep = 5\n"));
  REQUIRE(run({"train", "pert.ini", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  write_text(dir / "base.ini", tiny_config("snapshot_steps = 5, 6\n"));
  REQUIRE(run({"train", "base.ini", "--out", "base.h5"}, SpawnOptions{0, d}).code == 0);

  // mpirun itself as the child: Child runs the samebits binary, so spawn through `sh -c`.
  std::string command = launcher + " --oversubscribe --bind-to none -np 2";
  if (::geteuid() == 0) command += " --allow-run-as-root";
  command += " " + samebits_binary() + " train pert.ini --out two.h5 > mpi.log 2>&1";
  const int status = std::system(("cd '" + d + "' && ASAN_OPTIONS=detect_leaks=0 " + command).c_str());
  std::ifstream log(dir / "mpi.log");
  const std::string output((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (output.find("built without MPI") != std::string::npos) sb::test::skip("samebits was built without MPI");
  REQUIRE_MESSAGE(WIFEXITED(status), output);
  REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, output);

  const Result same = run({"diff", dir / "one.h5", dir / "two.h5"});
  CHECK_MESSAGE(same.code == 0, same.output);
  const Result apart = run({"diff", dir / "base.h5", dir / "two.h5"});
  CHECK(apart.code == 1);
  CHECK(apart.output.find("first divergent step 6") != std::string::npos);
}
