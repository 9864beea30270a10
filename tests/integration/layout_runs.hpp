// The layout tests' runs (test_cli_tp, test_cli_pp): one experiment config trained under
// `mpirun -np N samebits train CONFIG …` and in one process, compared with `samebits diff`.
#pragma once
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"

namespace sbt {

// `mpirun -np ranks samebits train config ARGS` in dir: its exit status and output.
inline sb::test::Launch train_mpi(const TempDir& dir, int ranks, const std::string& config, const std::string& args) {
  return sb::test::mpirun_in(dir.path.string(), ranks, samebits_binary() + " train " + config + " " + args);
}

// The same, required to succeed.
inline void train_mpi_ok(const TempDir& dir, int ranks, const std::string& config, const std::string& args) {
  const sb::test::Launch r = train_mpi(dir, ranks, config, args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
}

// One process of the same experiment into `out`.
inline void train_one(const TempDir& dir, const std::string& config, const std::string& out, const std::string& args) {
  std::vector<std::string> argv{"train", config, "--out", out};
  std::istringstream in(args);
  for (std::string a; in >> a;) argv.push_back(a);
  const Result r = run(argv, SpawnOptions{0, dir.path.string()});
  REQUIRE_MESSAGE(r.code == 0, r.output);
}

// `samebits diff a b` in dir says IDENTICAL.
inline void check_identical(const TempDir& dir, const std::string& a, const std::string& b) {
  const Result same = run({"diff", dir / a, dir / b});
  CHECK_MESSAGE(same.code == 0, same.output);
  CHECK(same.output.find("IDENTICAL") != std::string::npos);
}

}  // namespace sbt
