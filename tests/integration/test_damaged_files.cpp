// Run files and checkpoints are untrusted input: more than 200 damaged variants of real tiny runs
// (test_damaged_files.hpp), each given to inspect and diff, a quarter to verify, and a subset to
// --resume (damaged run file: a clear error that changes nothing; damaged newest checkpoint: the
// previous one is used and the result is the uninterrupted run's). Exit 0/1/2, never a crash.
// tests/slow/test_damaged_files_slow.cpp runs ten times as many random variants.
#include "integration/test_damaged_files.hpp"

TEST_CASE("damaged run files: inspect, diff and verify answer clearly, never crash") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "variants";
  sbt::fs::create_directories(dir);
  std::vector<sbt::Variant> variants = sbt::byte_variants(s.finished, dir, "bytes", 120, 1);
  const auto structural = sbt::structure_variants(s.finished, dir, "edit");
  variants.insert(variants.end(), structural.begin(), structural.end());
  MESSAGE(variants.size(), " damaged variants of a finished run (", structural.size(), " edited with the h5 layer)");
  CHECK(variants.size() >= 200);
  sbt::check_readers(variants, s.finished, 4);
}

TEST_CASE("damaged run files and checkpoints under --resume: a clear error, or a fall-back to the same result") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "variants";
  sbt::fs::create_directories(dir);
  std::vector<sbt::Variant> run_files = sbt::byte_variants(s.stopped, dir, "bytes", 16, 2);
  const auto structural = sbt::structure_variants(s.stopped, dir, "edit");
  for (size_t i = 0; i < structural.size(); i += 4) run_files.push_back(structural[i]);
  sbt::check_resume_run_file(s, run_files, root.path.string());

  const std::string newest = sb::run::store_file(s.stopped, sb::run::StoreEntry{12, sb::run::kStateBit, 0, 0});
  const auto checkpoints = sbt::byte_variants(newest, dir, "ckpt", 12, 3);
  sbt::check_resume_checkpoint(s, checkpoints, root.path.string());
  MESSAGE(run_files.size(), " run-file variants and ", checkpoints.size(), " checkpoint variants resumed");
}
