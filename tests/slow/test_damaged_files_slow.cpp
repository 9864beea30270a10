// tests/integration/test_damaged_files.cpp at scale: 2000 random byte-damaged variants of a finished
// run (inspect, diff, every 10th verify), and --resume over 100 damaged run files, every structural
// edit, and 100 damaged newest checkpoints.
#include "integration/test_damaged_files.hpp"

TEST_CASE("2000 byte-damaged run files: inspect, diff and verify answer clearly, never crash") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "variants";
  sbt::fs::create_directories(dir);
  sbt::check_readers(sbt::byte_variants(s.finished, dir, "bytes", 2000, 11), s.finished, 10);
}

TEST_CASE("--resume over damaged run files and checkpoints at scale") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "variants";
  sbt::fs::create_directories(dir);
  std::vector<sbt::Variant> run_files = sbt::byte_variants(s.stopped, dir, "bytes", 100, 12);
  const auto structural = sbt::structure_variants(s.stopped, dir, "edit");
  run_files.insert(run_files.end(), structural.begin(), structural.end());
  sbt::check_resume_run_file(s, run_files, root.path.string());
  const std::string newest = sb::run::store_file(s.stopped, sb::run::StoreEntry{12, sb::run::kStateBit, 0, 0});
  sbt::check_resume_checkpoint(s, sbt::byte_variants(newest, dir, "ckpt", 100, 13), root.path.string());
}
