// verify --budget 2m on the 300-step default run with train.keep_states 50 (docs/ARTIFACTS.md):
// the plan is printed before the first window, the command ends within the budget + 10 %, and
// every chosen window is IDENTICAL. Label slow: the training alone takes 1.5-3 minutes on 2 cores.
#include <doctest/doctest.h>

#include <chrono>

#include "integration/test_cli_support.hpp"

namespace {
namespace fs = std::filesystem;
const fs::path kSourceRoot = fs::path(__FILE__).parent_path().parent_path().parent_path();
}  // namespace

TEST_CASE("verify --budget 2m on the 300-step default run: the plan, within the budget, every window identical") {
  sbt::TempDir dir;
  const std::string out = (dir.path / "default.h5").string();
  auto r = sbt::run({"train", (kSourceRoot / "experiments" / "configs" / "default.ini").string(), "--out", out,
                     "--train.keep_states", "50", "--run.progress", "off"});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  const auto start = std::chrono::steady_clock::now();
  r = sbt::run({"verify", out, "--budget", "2m", "--run.progress", "off"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));
  MESSAGE("verify --budget 2m took ", seconds, " s:\n", r.output);
  CHECK(seconds <= 132.0);
  const std::size_t plan = r.output.find("plan: verify");
  REQUIRE(plan != std::string::npos);
  CHECK(plan < r.output.find("verifying"));
  CHECK(r.output.find("MISMATCH") == std::string::npos);
  CHECK(r.output.find("verdict: IDENTICAL") != std::string::npos);
}
