// Helpers of the test_mpi_* tests: launch tests/tools/mpi_train_driver alone or under mpirun
// (mpi_launch.hpp), with a wall-clock limit, and keep the lines whose bits the contract fixes.
// Skips (exit 77) when this build has no MPI/mpirun.
#pragma once
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "mpi_launch.hpp"

namespace sb::test {

inline std::string driver() { return SB_MPI_DRIVER; }

// The driver's output lines that must not depend on the execution ("step …" and "final …").
inline std::vector<std::string> result_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("step ", 0) == 0 || line.rfind("final ", 0) == 0) lines.push_back(line);
  }
  return lines;
}

// The driver's "# optimizer_state_bytes b0 b1 …" line as numbers.
inline std::vector<unsigned long long> state_bytes(const std::string& output) {
  std::vector<unsigned long long> bytes;
  const std::string key = "# optimizer_state_bytes";
  const size_t at = output.find(key);
  if (at == std::string::npos) return bytes;
  std::istringstream in(output.substr(at + key.size(), output.find('\n', at) - at - key.size()));
  for (unsigned long long b; in >> b;) bytes.push_back(b);
  return bytes;
}

// The "kind=CALLSxBYTES" entry of collective `kind` in the driver's "# traffic step 1" line, or
// "" when the step made no such call.
inline std::string first_step_traffic(const std::string& output, const std::string& kind) {
  const size_t line = output.find("# traffic step 1 ");
  if (line == std::string::npos) return "";
  std::istringstream in(output.substr(line, output.find('\n', line) - line));
  for (std::string token; in >> token;) {
    if (token.rfind(kind + "=", 0) == 0) return token;
  }
  return "";
}

// One training run: the driver alone when ranks == 0, else under mpirun with that many ranks.
inline Launch train(int ranks, const std::string& args, int limit_s = 300) {
  const std::string command = (ranks == 0 ? "" : mpirun(ranks) + " ") + driver() + " " + args;
  Launch r = launch(command, limit_s);
  INFO(command);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace sb::test
