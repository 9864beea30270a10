// Data provenance (docs/FORMAT.md "Data provenance"): a run on shard files records each file's
// name, size and digest; after one token of a data file changes, verify exits 1 naming the file
// before it trains a step and train --resume refuses, even with the file's mtime set back (the
// digest cache keys on ctime too); inspect shows the data files and the environment.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "integration/test_cli_support.hpp"
#include "samebits/data/file_digest.hpp"

namespace {

using sbt::run;
using sbt::TempDir;

// A tiny experiment on two synthetic shards written by `samebits data synth`.
std::string shard_config(const TempDir& dir) {
  const std::string train = (dir.path / "tok_train.bin").string(), val = (dir.path / "tok_val.bin").string();
  for (const auto& [file, split] : {std::pair{train, "train"}, std::pair{val, "validation"}}) {
    const auto r = run({"data", "synth", "--out", file, "--tokens", "20000", "--vocab", "64", "--split", split});
    REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  }
  const std::string ini = (dir.path / "run.ini").string();
  std::string text = sbt::tiny_config();
  text.replace(text.find("[data]\n"), 7, "[data]\nsource = shards\npath = " + train + "\nval_path = " + val + "\n");
  sbt::write_text(ini, text);
  return ini;
}

// Changes the token at byte `offset` of `path` (past the 1024-byte header) and sets the file's
// mtime back to what it was.
void change_one_token(const std::string& path, std::size_t offset) {
  struct stat before {};
  REQUIRE(::stat(path.c_str(), &before) == 0);
  std::vector<char> bytes = sbt::read_bytes(path);
  REQUIRE(offset + 1 < bytes.size());
  bytes[offset] = char(bytes[offset] ^ 1);  // token t ↔ t ^ 1, still < vocab
  sbt::write_bytes(path, bytes);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("a data file changed after training: verify names it before a step, resume refuses") {
  TempDir dir;
  ::setenv("SB_DIGEST_CACHE", (dir.path / "digests.tsv").string().c_str(), 1);
  const std::string ini = shard_config(dir);
  const std::string out = (dir.path / "run.h5").string();
  auto r = run({"train", ini, "--out", out});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));

  r = run({"inspect", out});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  CHECK(r.output.find("tok_train.bin") != std::string::npos);
  CHECK(r.output.find("tok_val.bin") != std::string::npos);
  CHECK(r.output.find("HDF5: ") != std::string::npos);
  CHECK(r.output.find("OpenBLAS: ") != std::string::npos);
  CHECK(r.output.find("MPI: ") != std::string::npos);

  r = run({"verify", out});
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));

  change_one_token((dir.path / "tok_train.bin").string(), 1024 + 2 * 777);
  r = run({"verify", out});
  CHECK_MESSAGE(r.code == 1, sbt::describe(r));
  CHECK(r.output.find("DATA DIFFERS") != std::string::npos);
  CHECK(r.output.find("tok_train.bin") != std::string::npos);
  CHECK(r.output.find("sizes equal") != std::string::npos);
  CHECK(r.output.find("tok_val.bin") == std::string::npos);  // only the file that differs
  CHECK(r.output.find("verifying") == std::string::npos);    // no step was trained
  r = run({"verify", out, "--budget", "1m"});
  CHECK_MESSAGE(r.code == 1, sbt::describe(r));
  CHECK(r.output.find("tok_train.bin") != std::string::npos);
  CHECK(r.output.find("plan:") == std::string::npos);

  // A stopped run resumed on the changed data is refused, naming the file.
  const std::string stopped = (dir.path / "stopped.h5").string();
  change_one_token((dir.path / "tok_train.bin").string(), 1024 + 2 * 777);  // back to the original token
  r = run({"train", ini, "--out", stopped, "--stop-after", "5"});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  change_one_token((dir.path / "tok_val.bin").string(), 1024 + 2 * 5);
  r = run({"train", ini, "--out", stopped, "--resume"});
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));
  CHECK(r.output.find("cannot resume") != std::string::npos);
  CHECK(r.output.find("tok_val.bin") != std::string::npos);
  ::unsetenv("SB_DIGEST_CACHE");
}

TEST_CASE("file digests: the cache answers for an unchanged file and misses after a write") {
  TempDir dir;
  ::setenv("SB_DIGEST_CACHE", (dir.path / "digests.tsv").string().c_str(), 1);
  const std::string file = (dir.path / "data.txt").string();
  sbt::write_text(file, std::string(5000, 'a') + "the end\n");
  const sb::data::FileDigest first = sb::data::file_digest(file);
  CHECK_FALSE(first.cached);
  CHECK(first.bytes == 5008);
  CHECK(first.digest == sb::data::hash_file(file).digest);
  const sb::data::FileDigest second = sb::data::file_digest(file);
  CHECK(second.cached);
  CHECK(second.digest == first.digest);
  change_one_token(file, 4000);  // mtime set back: the ctime still moved
  const sb::data::FileDigest third = sb::data::file_digest(file);
  CHECK_FALSE(third.cached);
  CHECK(third.digest != first.digest);
  ::setenv("SB_DIGEST_CACHE", "off", 1);
  CHECK_FALSE(sb::data::file_digest(file).cached);
  ::unsetenv("SB_DIGEST_CACHE");
}
