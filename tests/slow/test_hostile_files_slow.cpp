// The long resealing fuzzer (label slow; test_hostile_files.hpp): 2400 mutants of a finished run's
// HDF5 metadata (a quarter with variable-length strings) through inspect and diff, every 10th also
// through verify --steps 2 and train --resume, and 100 mutants of a checkpoint under --resume.
// Run it under the debug preset (ASan+UBSan) and the release build; its MESSAGE gives the counts.
#include "integration/test_hostile_files.hpp"

TEST_CASE("2400 resealed mutants of HDF5 metadata: no signal, no sanitizer report, no hang") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "mutants";
  sbt::fs::create_directories(dir);
  const char* count_env = std::getenv("SB_HOSTILE_MUTANTS");  // fewer for a quick look
  const int count = count_env != nullptr ? std::atoi(count_env) : 2400;
  const sbt::Mutants m = sbt::make_mutants(s, dir, count, std::max(4, count / 24), 2026);
  sbt::FuzzCounts counts;
  sbt::fuzz_commands(m.runs, s, root.path.string(), 10, counts);
  sbt::fuzz_checkpoints(m.checkpoints, s, root.path.string(), counts);
  MESSAGE(m.runs.size(), " run-file and ", m.checkpoints.size(), " checkpoint mutants; ", counts.summary());
  CHECK_MESSAGE(counts.signals + counts.sanitizer + counts.hangs + counts.unclear == 0, counts.first_problem);
}
