// Launching under mpirun in the integration tests (the driver's test_mpi_* through mpi_support.hpp,
// and the CLI's test_cli_mpi, test_cli_diff_mpi, test_cli_tp, test_trace_mpi): a command through
// the shell with a wall-clock limit, and this build's MPI launcher (SB_MPIEXEC; --oversubscribe,
// --allow-run-as-root when root, as in CI). Skips (exit 77) when this build has no MPI/mpirun.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "support/skip.hpp"

namespace sb::test {

struct Launch {
  int exit_code = -1;  // the command's exit status (124: the time limit ran out)
  std::string output;  // stdout and stderr together
  double seconds = 0;  // wall time
};

// Runs `command` through the shell under `timeout` (SIGTERM at limit_s, SIGKILL 5 s later), in
// `dir` when it is not empty.
inline Launch launch(const std::string& command, int limit_s, const std::string& dir = "") {
  const std::string line =
      (dir.empty() ? "" : "cd '" + dir + "' && ") + "timeout -k 5 " + std::to_string(limit_s) + " " + command + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  Launch r;
  FILE* pipe = popen(line.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// "mpirun … -np N": skips the test when MPI or mpirun is absent.
inline std::string mpirun(int ranks) {
  const std::string exe = SB_MPIEXEC;
  if (exe.empty() || !std::filesystem::exists(exe)) skip("no MPI launcher (mpirun) in this build");
  std::string s = exe + " --oversubscribe --bind-to none -np " + std::to_string(ranks);
  if (geteuid() == 0) s += " --allow-run-as-root";
  return s;
}

// `mpirun -np ranks COMMAND` in dir. LeakSanitizer off in sanitizer builds: Open MPI's components
// leak at exit and are unloaded before it reports, so no suppression can name them (the
// one-process tests check our code for leaks).
inline Launch mpirun_in(const std::string& dir, int ranks, const std::string& command, int limit_s = 600) {
  return launch("env ASAN_OPTIONS=detect_leaks=0 " + mpirun(ranks) + " " + command, limit_s, dir);
}

}  // namespace sb::test
