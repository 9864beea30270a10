// The SIGKILL-and-resume trials of tests/integration/test_crash_resume.cpp at scale: 60 kills in
// at least 30 runs with a checkpoint (and run-file commit) after every step, and as many with one
// every 3 steps; every resumed run must have the uninterrupted run's content.
#include "integration/test_crash_resume.hpp"

using namespace sbt::crash;

TEST_CASE("SIGKILL at random moments, a checkpoint every step") {
  std::string config = config_text();
  config.replace(config.find("checkpoint_every = 3"), 20, "checkpoint_every = 1");
  kill_and_resume(config, 60, 30, 7);
}

TEST_CASE("SIGKILL at random moments, a checkpoint every 3 steps") { kill_and_resume(config_text(), 60, 30, 8); }
