// Run files from strangers (test_hostile_files.hpp): resealed mutants of HDF5 metadata — every kind
// of structure the file holds, in run files as written and with variable-length strings as older
// files have them, and in checkpoints — through inspect, diff, verify --steps 2 and train --resume.
// Each is read correctly or refused with one clear line (exit 2); never a signal, a sanitizer report
// or a hang. The same for token files from others (test_hostile_tokens.hpp: HDF5 and llm.c shards)
// through data inspect and train. tests/slow/test_hostile_files_slow.cpp runs 2000 and more.
#include "integration/test_hostile_tokens.hpp"

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

TEST_CASE("damaged token files (HDF5 metadata, shard headers and sizes): data inspect and train read or refuse them") {
  sbt::TempDir root;
  sbt::FuzzCounts counts;
  const int mutants = sbt::fuzz_token_sources(root.path.string(), 16, 16, 4, 41, counts);
  MESSAGE(mutants, " token-file mutants; ", counts.summary());
  CHECK_MESSAGE(counts.signals + counts.sanitizer + counts.hangs + counts.unclear == 0, counts.first_problem);
  CHECK(counts.refused > 0);
  CHECK(counts.unsafe + counts.read < counts.commands);  // most are refused by HDF5 or the checks, not all read
}

TEST_CASE("text from a resealed file reaches the terminal escaped") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string shown = root / "shown.h5", refused = root / "refused.h5";
  sbt::edited_copy(s.finished, shown, [](sb::h5::File& f) {
    f.set_attr("host", "vm\x1b[2J\x1b[31m");
    f.set_attr("backend", "cpu \xff\xfe \xe2\x80\xae");
  });
  sbt::edited_copy(s.finished, refused, [](sb::h5::File& f) { f.set_attr("status", "exploded\x1b]0;pwned\x07"); });
  const sbt::Result a = sbt::run({"inspect", shown});
  INFO(sbt::describe(a));
  CHECK(a.code == 0);
  CHECK(a.output.find("vm\\x1b[2J\\x1b[31m") != std::string::npos);
  CHECK(a.output.find("cpu \\xff\\xfe \\xe2\\x80\\xae") != std::string::npos);
  const sbt::Result b = sbt::run({"inspect", refused});
  INFO(sbt::describe(b));
  CHECK(b.code == 2);
  CHECK(b.output.find("'exploded\\x1b]0;pwned\\x07'") != std::string::npos);
  for (const sbt::Result* r : {&a, &b}) {
    CHECK(r->output.find('\x1b') == std::string::npos);
    CHECK(r->output.find('\x07') == std::string::npos);
    CHECK(r->output.find('\xff') == std::string::npos);
  }
}
