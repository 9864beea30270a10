// The SIGKILL-and-resume trials of test_crash_resume (default suite) and its slow sibling: a
// reference run, then runs killed at random moments (one to three kills in a row, each at a
// uniformly random moment of a whole run's duration) and resumed to the end; each must have the
// reference's content and leave no temporary files or unindexed store files behind.
#pragma once
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "integration/test_cli_support.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_store.hpp"

namespace sbt::crash {

// 60 steps, a checkpoint every 3 (many commits to land in), snapshots, validation.
inline const std::string kTrain = "checkpoint_every = 3\nsnapshot_steps = 0, 10, 31, 60\n";

inline std::string config_text() {
  std::string c = tiny_config(kTrain);
  c.replace(c.find("steps = 20"), 10, "steps = 60");
  return c;
}

// Trains `config` into dir/run.h5 (relative paths, so the recorded run.out is the same everywhere).
inline Result train(const std::string& dir, std::vector<std::string> extra = {}, SpawnOptions options = {}) {
  std::vector<std::string> args{"train", "run.ini", "--out", "run.h5"};
  args.insert(args.end(), extra.begin(), extra.end());
  options.cwd = dir;
  return run(args, options);
}

inline std::string make_dir(const TempDir& root, const std::string& name, const std::string& config) {
  const std::string dir = root / name;
  fs::create_directories(dir);
  write_text(dir + "/run.ini", config);
  return dir;
}

// The state files a run's index names, ascending by step.
inline std::vector<std::string> state_files(const std::string& run_file) {
  std::vector<std::string> out;
  const sb::run::RunReader run = sb::run::RunReader::open(run_file);
  for (const sb::run::StoreEntry& e : run.store_entries()) {
    if (e.is_state()) out.push_back(sb::run::store_file(run_file, e));
  }
  return out;
}

// The store files of a run that its index does not name (none may stay after a session ends).
inline std::vector<std::string> unindexed_store_files(const std::string& run_file) {
  std::set<std::string> indexed;
  const sb::run::RunReader run = sb::run::RunReader::open(run_file);
  for (const sb::run::StoreEntry& e : run.store_entries()) {
    indexed.insert(fs::path(sb::run::store_file(run_file, e)).filename().string());
  }
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(sb::run::store_dir(run_file))) {
    if (!indexed.count(e.path().filename().string())) out.push_back(e.path().string());
  }
  return out;
}

// Leftover temporary files beside the run file or in its store.
inline int temporaries(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  }
  return n;
}

// Kills and resumes until `min_kills` SIGKILLs have landed in at least `min_trials` runs of
// `config` (kills that come after a run ended do not count).
inline void kill_and_resume(const std::string& config, int min_kills, int min_trials, uint64_t seed) {
  TempDir root;
  const std::string ref = make_dir(root, "ref", config);
  const auto start = std::chrono::steady_clock::now();
  const Result r = train(ref);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  {
    // The reference the trials are compared with: finished, all 60 steps recorded.
    const sb::run::RunReader reference = sb::run::RunReader::open(ref + "/run.h5");
    REQUIRE(reference.info().status == sb::run::Status::finished);
    REQUIRE(reference.steps_recorded() == 60);
  }

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> moment(0.02, 1.0);
  int kills = 0, trials = 0;
  for (int attempt = 0; attempt < 5 * min_trials + 20 && (kills < min_kills || trials < min_trials); ++attempt) {
    const std::string dir = make_dir(root, "trial" + std::to_string(attempt), config);
    // One to three kills in a row, each at a random moment of a whole run's duration.
    const int chain = 1 + int(rng() % 3);
    int landed = 0;
    for (int k = 0; k < chain; ++k) {
      Child child({"train", "run.ini", "--out", "run.h5", "--resume"}, SpawnOptions{0, dir});
      const double delay = moment(rng) * seconds;
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      child.kill(SIGKILL);
      const Result killed = child.wait();
      CHECK_MESSAGE((killed.signal == SIGKILL || killed.code == 0), describe(killed));
      landed += killed.signal == SIGKILL;
    }
    const Result resumed = train(dir, {"--resume"});
    REQUIRE_MESSAGE(resumed.code == 0, describe(resumed));
    CHECK_MESSAGE(content_difference(ref + "/run.h5", dir + "/run.h5") == "", "attempt ", attempt, " (", landed,
                  " kills):\n", resumed.output);
    CHECK(temporaries(dir) == 0);
    CHECK(unindexed_store_files(dir + "/run.h5").empty());
    kills += landed;
    trials += landed > 0;
  }
  MESSAGE(kills, " SIGKILLs landed in ", trials, " interrupted runs (uninterrupted run: ", seconds, " s)");
  CHECK(kills >= min_kills);
  CHECK(trials >= min_trials);
}

}  // namespace sbt::crash
