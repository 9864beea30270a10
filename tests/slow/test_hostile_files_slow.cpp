// The long resealing fuzzer (label slow; test_hostile_files.hpp): 2400 mutants of a finished run's
// HDF5 metadata (a quarter with variable-length strings) through inspect and diff, every 10th also
// through verify --steps 2 and train --resume, and 100 mutants of a checkpoint under --resume.
// Then 2 x 400 mutants of HDF5 token files and 200 of an llm.c shard, through data inspect and
// (every 10th) train. Run it under the debug preset (ASan+UBSan) and the release build; the
// MESSAGEs give the counts.
#include "integration/test_hostile_tokens.hpp"

TEST_CASE("2400 resealed mutants of HDF5 metadata: no signal, no sanitizer report, no hang") {
  sbt::TempDir root;
  const sbt::Sources s = sbt::make_sources(root);
  const std::string dir = root / "mutants";
  sbt::fs::create_directories(dir);
  // SB_HOSTILE_MUTANTS and SB_HOSTILE_SEED split the work into shards run side by side (two shards
  // of 1200 with seeds 2026 and 2027 under ASan in about 41 minutes on two shared cores).
  const char* count_env = std::getenv("SB_HOSTILE_MUTANTS");
  const char* seed_env = std::getenv("SB_HOSTILE_SEED");
  const int count = count_env != nullptr ? std::atoi(count_env) : 2400;
  const uint64_t seed = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 2026;
  const sbt::Mutants m = sbt::make_mutants(s, dir, count, std::max(4, count / 24), seed);
  sbt::FuzzCounts counts;
  sbt::fuzz_commands(m.runs, s, root.path.string(), 10, counts);
  sbt::fuzz_checkpoints(m.checkpoints, s, root.path.string(), counts);
  MESSAGE("seed ", seed, ": ", m.runs.size(), " run-file and ", m.checkpoints.size(), " checkpoint mutants; ",
          counts.summary(), counts.class_table());
  CHECK_MESSAGE(counts.signals + counts.sanitizer + counts.hangs + counts.unclear == 0, counts.first_problem);
}

TEST_CASE(
    "1000 damaged token files (HDF5 metadata, shard headers and sizes): no signal, no sanitizer report, no hang") {
  sbt::TempDir root;
  // SB_HOSTILE_TOKEN_MUTANTS: mutants of each HDF5 token file (the shard gets half as many);
  // SB_HOSTILE_SEED as above.
  const char* count_env = std::getenv("SB_HOSTILE_TOKEN_MUTANTS");
  const char* seed_env = std::getenv("SB_HOSTILE_SEED");
  const int count = count_env != nullptr ? std::atoi(count_env) : 400;
  const uint64_t seed = seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 2026;
  sbt::FuzzCounts counts;
  const int mutants = sbt::fuzz_token_sources(root.path.string(), count, count / 2, 10, seed, counts);
  MESSAGE("seed ", seed, ": ", mutants, " token-file mutants; ", counts.summary(), counts.class_table());
  CHECK_MESSAGE(counts.signals + counts.sanitizer + counts.hangs + counts.unclear == 0, counts.first_problem);
}
