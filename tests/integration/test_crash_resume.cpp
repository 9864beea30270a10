// Crash safety of `samebits train` (docs/CONTRACT.md, "time"): SIGKILL at random moments (in the
// middle of a step, a checkpoint or a run-file commit), then --resume, ends with the same run-file
// content as an uninterrupted run — every dataset bitwise (not /timing), every attribute (not host, time_*).
// Also: SIGINT checkpoints and stops cleanly; a damaged newest checkpoint is passed over (and the
// resume says so); a full disk (RLIMIT_FSIZE: writes fail with EFBIG) while checkpointing is a
// clear error that leaves the earlier checkpoints intact, and the run resumes to the same content.
#include "integration/test_crash_resume.hpp"

using namespace sbt;
using namespace crash;

TEST_CASE("SIGKILL at random moments, then --resume: the same file content as an uninterrupted run") {
  kill_and_resume(config_text(), 8, 6, 20240601);
}

TEST_CASE("SIGINT and --stop-after end with a checkpoint; --resume continues to the same content") {
  TempDir root;
  const std::string ref = make_dir(root, "ref", config_text());
  REQUIRE(train(ref).code == 0);

  const std::string stopped = make_dir(root, "stopped", config_text());
  const Result s = train(stopped, {"--stop-after", "17"});
  CHECK_MESSAGE(s.code == 0, s.output);
  CHECK(s.output.find("stopped (--stop-after 17) after step 17") != std::string::npos);
  const Result inspect = run({"inspect", stopped + "/run.h5"});
  CHECK(inspect.output.find("status       failed: stopped (--stop-after 17) after step 17") != std::string::npos);
  CHECK(inspect.output.find("17 of 60 recorded") != std::string::npos);
  CHECK(sb::run::RunReader::open(stopped + "/run.h5").state_steps() == std::vector<int64_t>{15, 17});
  const Result resumed = train(stopped, {"--resume"});
  CHECK(resumed.output.find("at step 17 (from checkpoint run.store/state_step_000017.h5)") != std::string::npos);
  CHECK(content_difference(ref + "/run.h5", stopped + "/run.h5") == "");

  // SIGINT once the handlers are in place (the run file exists); a run that finished before the
  // signal arrived is tried again, and one of three tries must be interrupted.
  std::string interrupted;
  bool landed = false;
  for (int attempt = 0; attempt < 3 && !landed; ++attempt) {
    interrupted = make_dir(root, "sigint" + std::to_string(attempt), config_text());
    Child child({"train", "run.ini", "--out", "run.h5"}, SpawnOptions{0, interrupted});
    for (int i = 0; i < 20000 && !fs::exists(interrupted + "/run.h5"); ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    child.kill(SIGINT);
    const Result r = child.wait();
    landed = r.code != 0;
    if (landed) {
      CHECK_MESSAGE(r.code == 2, describe(r));
      CHECK(r.output.find("interrupted by SIGINT after step") != std::string::npos);
      CHECK(sb::run::RunReader::open(interrupted + "/run.h5").info().status == sb::run::Status::failed);
    }
  }
  REQUIRE_MESSAGE(landed, "three runs finished before SIGINT arrived");
  REQUIRE(train(interrupted, {"--resume"}).code == 0);
  CHECK(content_difference(ref + "/run.h5", interrupted + "/run.h5") == "");
}

TEST_CASE("a damaged newest checkpoint: --resume falls back to the previous one and says so") {
  TempDir root;
  const std::string ref = make_dir(root, "ref", config_text());
  REQUIRE(train(ref).code == 0);
  for (const char* damage : {"flip", "truncate", "empty"}) {
    CAPTURE(damage);
    const std::string dir = make_dir(root, damage, config_text());
    REQUIRE(train(dir, {"--stop-after", "20"}).code == 0);
    const std::string newest = state_files(dir + "/run.h5").back();
    std::vector<char> bytes = read_bytes(newest);
    REQUIRE(bytes.size() > 1000);
    if (std::string(damage) == "flip") bytes[bytes.size() / 3] ^= 0x10;
    if (std::string(damage) == "truncate") bytes.resize(bytes.size() / 2);
    if (std::string(damage) == "empty") bytes.clear();
    write_bytes(newest, bytes);
    const Result r = train(dir, {"--resume"});
    REQUIRE_MESSAGE(r.code == 0, describe(r));
    CHECK_MESSAGE(r.output.find("checkpoint run.store/state_step_000020.h5 is not usable") != std::string::npos,
                  r.output);
    CHECK(r.output.find("falling back to the previous one") != std::string::npos);
    CHECK(r.output.find("at step 18 (from checkpoint run.store/state_step_000018.h5)") != std::string::npos);
    CHECK(content_difference(ref + "/run.h5", dir + "/run.h5") == "");
  }
}

TEST_CASE("disk full while checkpointing: a clear error, earlier checkpoints intact, then the same content") {
  TempDir root;
  // 64 wide: a checkpoint (parameters and optimizer state) is larger than the run file.
  std::string config = tiny_config("checkpoint_every = 5\n", 64);
  const std::string ref = make_dir(root, "ref", config);
  REQUIRE(train(ref).code == 0);
  const std::string dir = make_dir(root, "full", config);
  REQUIRE(train(dir, {"--stop-after", "6"}).code == 0);
  const std::string run_file = dir + "/run.h5";
  const auto before = state_files(run_file);
  REQUIRE(before.size() == 2);
  const uint64_t run_size = fs::file_size(run_file), checkpoint_size = fs::file_size(before[0]);
  REQUIRE_MESSAGE(run_size + 20000 < checkpoint_size, run_size, " vs ", checkpoint_size);
  const std::vector<char> kept5 = read_bytes(before[0]), kept6 = read_bytes(before[1]);

  // Files may grow to the middle of the two sizes: the run file's commits fit, the checkpoint of
  // step 10 does not.
  const Result full = train(dir, {"--resume"}, SpawnOptions{(run_size + checkpoint_size) / 2, ""});
  CHECK_MESSAGE(full.code == 2, describe(full));
  CHECK(full.output.find("cannot write the checkpoint run.store/state_step_000010.h5 (disk full?); the earlier "
                         "checkpoints are intact") != std::string::npos);
  CHECK(full.output.find("File too large") != std::string::npos);
  CHECK(read_bytes(before[0]) == kept5);
  CHECK(read_bytes(before[1]) == kept6);
  CHECK(temporaries(dir) == 0);
  CHECK(state_files(run_file) == before);
  CHECK(unindexed_store_files(run_file).empty());
  // Held open (as a notebook would) while the run is resumed below: never a lock conflict.
  const sb::run::RunReader failed = sb::run::RunReader::open(run_file);
  CHECK(failed.info().status == sb::run::Status::failed);
  CHECK(failed.info().error.find("disk full?") != std::string::npos);

  // A limit below even the run file: the commit itself fails, the old file stays.
  const std::vector<char> run_bytes = read_bytes(run_file);
  const Result tiny = train(dir, {"--resume"}, SpawnOptions{run_size / 2, ""});
  CHECK(tiny.code == 2);
  CHECK(tiny.output.find("File too large") != std::string::npos);
  CHECK(read_bytes(run_file) == run_bytes);
  CHECK(temporaries(dir) == 0);

  const Result resumed = train(dir, {"--resume"});
  REQUIRE_MESSAGE(resumed.code == 0, describe(resumed));
  CHECK(content_difference(ref + "/run.h5", run_file) == "");
  // The reader still sees the file it opened: the state of step 10 is written while step 11 runs,
  // and its failure is reported with step 11's row.
  CHECK(failed.steps_recorded() == 11);
}
