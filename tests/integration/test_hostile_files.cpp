// Run files from strangers (test_hostile_files.hpp): resealed mutants of HDF5 metadata — every kind
// of structure the file holds, in run files as written and with variable-length strings as older
// files have them, and in checkpoints — through inspect, diff, verify --steps 2 and train --resume.
// Each is read correctly or refused with one clear line (exit 2); never a signal, a sanitizer report
// or a hang. tests/slow/test_hostile_files_slow.cpp runs 2000 and more.
#include "integration/test_hostile_files.hpp"

TEST_CASE("resealed mutants of HDF5 metadata: every command reads them or refuses them clearly") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "mutants";
  sbt::fs::create_directories(dir);
  const sbt::Mutants m = sbt::make_mutants(s, dir, 32, 4, 17);
  sbt::FuzzCounts counts;
  sbt::fuzz_commands(m.runs, s, root.path.string(), 4, counts);
  sbt::fuzz_checkpoints(m.checkpoints, s, root.path.string(), counts);
  MESSAGE(m.runs.size(), " run-file and ", m.checkpoints.size(), " checkpoint mutants; ", counts.summary());
  CHECK_MESSAGE(counts.signals + counts.sanitizer + counts.hangs + counts.unclear == 0, counts.first_problem);
  CHECK(counts.refused > 0);
}
