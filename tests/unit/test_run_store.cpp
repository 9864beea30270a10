// The run store (run_store.hpp, docs/FORMAT.md): a commit writes what it adds — its rows, its new
// store file, the index — never the snapshots and states the store already holds (counted in
// bytes, not seconds); a new run never takes over a store folder left by another; a resume removes
// the store files its index no longer names, and files a killed session wrote but never indexed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/io/store_data.hpp"
#include "samebits/core/train/run_header.hpp"

namespace {

using namespace sb;
using sbt::TempDir;
namespace fs = std::filesystem;

Config tiny(int64_t steps) {
  Config c = cli::config_from_text(sbt::tiny_config(), {});
  c.train.steps = steps;
  return c;
}

std::vector<float> weights(Trainer& trainer) {
  std::vector<float> v(trainer.model().flat_size());
  trainer.backend().copy_to_host(v.data(), trainer.model().weights().data(), v.size() * 4);
  return v;
}

// Bytes each commit of a 12-step run writes (commit() after every step), with a snapshot after
// each of the first 6 steps (`snapshots`) or none; the bytes of one snapshot file in `snapshot_bytes`.
std::vector<uint64_t> commit_bytes(const std::string& path, bool snapshots, uint64_t& snapshot_bytes) {
  const Config config = tiny(12);
  Trainer trainer(config);
  run::RunWriter w = run::RunWriter::create(path, sb::run_header(config, trainer));
  std::vector<uint64_t> out;
  for (int s = 1; s <= 12; ++s) {
    w.record(trainer.step());
    if (snapshots && s <= 6) {
      const uint64_t before = w.bytes_written();
      w.snapshot(s, weights(trainer));
      snapshot_bytes = w.bytes_written() - before;
    }
    const uint64_t before = w.bytes_written();
    w.commit();
    out.push_back(w.bytes_written() - before);
  }
  return out;
}

// The trainer's state after one step, and its run's tensor table.
std::pair<TrainerState, std::vector<run::TensorInfo>> state_after_a_step(const Config& config, Trainer& trainer) {
  trainer.step();
  return {trainer.export_state(), sb::run_header(config, trainer).tensors};
}

}  // namespace

TEST_CASE("the bytes a commit writes do not depend on how many snapshots the run holds") {
  TempDir dir;
  uint64_t snapshot_bytes = 0, unused = 0;
  const std::vector<uint64_t> with = commit_bytes(dir / "with.h5", true, snapshot_bytes);
  const std::vector<uint64_t> without = commit_bytes(dir / "without.h5", false, unused);
  REQUIRE(snapshot_bytes > 50000);
  MESSAGE("commit bytes, commits 1, 6, 12: with 6 snapshots ", with[0], ", ", with[5], ", ", with[11], "; without ",
          without[0], ", ", without[5], ", ", without[11], "; one snapshot file ", snapshot_bytes);
  for (std::size_t k = 0; k < with.size(); ++k) {
    CAPTURE(k);
    // The index rows and links of the snapshots held: a few KiB, never their parameters.
    CHECK(with[k] >= without[k]);
    CHECK(with[k] - without[k] <= 16384 + 4096 * std::min<std::size_t>(k + 1, 6));
    CHECK(with[k] - without[k] < snapshot_bytes / 2);
  }
  // Commits 7-12 add no snapshot: each writes exactly as many more bytes than the run without
  // snapshots as commit 6 did — nothing grows with the snapshots held.
  for (std::size_t k = 6; k < with.size(); ++k) CHECK(with[k] - without[k] == with[5] - without[5]);
}

TEST_CASE("a new run refuses a store folder that is not empty; a resume removes unindexed store files") {
  TempDir dir;
  const Config config = tiny(6);
  Trainer trainer(config);
  const run::RunHeader header = sb::run_header(config, trainer);
  const std::string path = dir / "run.h5";
  fs::create_directories(dir / "run.store");
  sbt::write_text(dir / "run.store/state_step_000001.h5", "someone else's");
  CHECK_THROWS_WITH_AS(run::RunWriter::create(path, header), doctest::Contains("already exists and is not empty"),
                       Error);
  CHECK(sbt::read_bytes(dir / "run.store/state_step_000001.h5").size() == 14);  // untouched
  fs::remove_all(dir / "run.store");

  run::RunWriter w = run::RunWriter::create(path, header);
  for (int s = 1; s <= 4; ++s) {
    w.record(trainer.step());
    w.checkpoint(trainer.export_state());
  }
  // As a session killed after writing a state file but before its commit would leave it.
  sbt::write_text(dir / "run.store/state_step_000005.h5", "half a session");
  sbt::write_text(dir / "run.store/snapshot_step_000002.h5.tmp.99", "a temporary");
  sbt::write_text(dir / "run.store/notes.txt", "a user's file");
  run::RunWriter::resume(path, header, 3, "test");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "run.store")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"notes.txt", "state_step_000003.h5"});
  CHECK(run::RunReader::open(path).state_steps() == std::vector<int64_t>{3});
}

namespace {

// A 6-step run with snapshots at 0 and 3, a checkpoint at 2, 3 and 4 (kept for good at 4) and a
// finish, its store files written in the background or before each call returns; the index.
std::vector<run::StoreEntry> store_run(const std::string& path, bool background) {
  const Config config = tiny(6);
  Trainer trainer(config);
  run::RunWriter w = run::RunWriter::create(path, sb::run_header(config, trainer));
  w.write_in_background(background);
  w.snapshot(0, weights(trainer));
  for (int s = 1; s <= 6; ++s) {
    w.record(trainer.step());
    if (s >= 2 && s <= 4) {
      w.wait_store();
      w.checkpoint(trainer.export_state(), s == 4);
    }
    if (s == 3) {  // served by the state of step 3, in flight: the weights are not even copied
      w.snapshot(3, [&] {
        FAIL("the snapshot of a step whose state is being written asked for a copy of the weights");
        return weights(trainer);
      });
    }
  }
  w.wait_store();
  w.finish(trainer.export_state());
  return run::RunReader::open(path).store_entries();
}

}  // namespace

TEST_CASE("store files written in the background: the same files and the same index as written in place") {
  TempDir dir;
  const std::vector<run::StoreEntry> here = store_run(dir / "here.h5", false);
  const std::vector<run::StoreEntry> behind = store_run(dir / "behind.h5", true);
  REQUIRE(here.size() == 4);  // snapshot 0, state 3 (also snapshot 3), state 4 (kept), final state 6
  REQUIRE(behind.size() == here.size());
  for (std::size_t k = 0; k < here.size(); ++k) {
    CAPTURE(k);
    CHECK(behind[k].step == here[k].step);
    CHECK(behind[k].kind == here[k].kind);
    CHECK(behind[k].digest == here[k].digest);  // content hashes: the files are bitwise the same
    CHECK(behind[k].bytes == here[k].bytes);
  }
  CHECK(here[1].step == 3);
  CHECK(here[1].kind == (run::kStateBit | run::kSnapshotBit));
  CHECK(here[2].kind == (run::kStateBit | run::kKeptBit));
}

TEST_CASE(
    "a store file that fails in the background surfaces as the checkpoint's error; the run file stays committed") {
  TempDir dir;
  const Config config = tiny(4);
  Trainer trainer(config);
  const std::string path = dir / "run.h5";
  run::RunWriter w = run::RunWriter::create(path, sb::run_header(config, trainer));
  w.write_in_background(true);
  w.record(trainer.step());
  w.checkpoint(trainer.export_state());
  w.wait_store();
  // The next state's file cannot be created: its name is taken by a folder.
  fs::create_directories(dir / "run.store/state_step_000002.h5");
  w.record(trainer.step());
  w.checkpoint(trainer.export_state());
  CHECK_THROWS_WITH_AS(w.wait_store(), doctest::Contains("cannot write the checkpoint"), Error);
  w.fail("stopped by the test");
  const run::RunReader r = run::RunReader::open(path);
  CHECK(r.state_steps() == std::vector<int64_t>{1});
  CHECK(r.info().status == run::Status::failed);
}

TEST_CASE(
    "store data written in one pass: the regions over what HDF5 left, hashed; direct and page-cache writes agree") {
  // A file of 3 windows and a partial block, random bytes standing for HDF5's metadata; regions
  // crossing window and block boundaries, one at the very start and one ending at the last byte.
  TempDir dir;
  const uint64_t length = 3 * (uint64_t{8} << 20) + 12345;
  std::vector<char> left(length), data(length);
  for (uint64_t i = 0; i < length; ++i) {
    left[i] = static_cast<char>((i * 2654435761u) >> 13);
    data[i] = static_cast<char>((i * 40503u + 7) >> 5);
  }
  const std::vector<std::pair<uint64_t, uint64_t>> spans = {{0, 100},
                                                            {4000, 200},
                                                            {4200, (uint64_t{8} << 20) - 1000},
                                                            {(uint64_t{16} << 20) - 3, 4099},
                                                            {(uint64_t{16} << 20) + 5000, (uint64_t{8} << 20)},
                                                            {length - 777, 777}};
  std::vector<char> expected = left;
  std::vector<run::RawWrite> raw;
  for (const auto& [offset, bytes] : spans) {
    std::memcpy(expected.data() + offset, data.data() + offset, bytes);
    raw.push_back({offset, data.data() + offset, bytes});
  }
  std::reverse(raw.begin(), raw.end());  // any order
  for (const bool direct : {true, false}) {
    CAPTURE(direct);
    const std::string file = dir / (direct ? "direct.bin" : "cached.bin");
    std::ofstream(file, std::ios::binary).write(left.data(), static_cast<std::streamsize>(length));
    const run::StoreDataWrite written = run::write_store_data(file, length, raw, direct);
    const uint64_t hash = written.digest;
    // Direct I/O writes every whole 4 KiB block, or none where the file system refuses O_DIRECT.
    CHECK(written.direct_bytes == (direct && written.direct_bytes > 0 ? length / 4096 * 4096 : 0));
    if (direct) {
      const std::string report = written.direct_bytes > 0
                                     ? "direct I/O ran: " + std::to_string(written.direct_bytes) + " of " +
                                           std::to_string(length) + " bytes in " + dir.path.string()
                                     : "direct I/O did not run: the file system of " + dir.path.string() +
                                           " refuses O_DIRECT; only the page-cache path was tested";
      MESSAGE(report);
    }
    std::ifstream in(file, std::ios::binary);
    const std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(back.size() == length);
    CHECK(std::memcmp(back.data(), expected.data(), length) == 0);
    run::append_seal(file, length, hash);
    CHECK(run::check_seal(file) == hash);  // the hash is the content's, as the seal's reader computes it
  }
  raw.push_back({length - 10, data.data(), 20});  // past the end
  CHECK_THROWS_WITH_AS(run::write_store_data(dir / "direct.bin", length, raw), doctest::Contains("outside the file"),
                       Error);
}

TEST_CASE("a state file and a snapshot read back bitwise") {
  TempDir dir;
  const Config config = tiny(2);
  Trainer trainer(config);
  const auto [state, tensors] = state_after_a_step(config, trainer);
  const std::string file = dir / "state.h5";
  const run::StoreEntry entry = run::write_state_file(file, state, tensors);
  const TrainerState back = run::read_store_state(file, entry, tensors);
  REQUIRE(back.weights.size() == state.weights.size());
  CHECK(std::memcmp(back.weights.data(), state.weights.data(), state.weights.size() * sizeof(float)) == 0);
  REQUIRE(back.optimizer.size() == state.optimizer.size());
  for (std::size_t k = 0; k < state.optimizer.size(); ++k) {
    CHECK(back.optimizer[k].name == state.optimizer[k].name);
    REQUIRE(back.optimizer[k].data.size() == state.optimizer[k].data.size());
    CHECK(std::memcmp(back.optimizer[k].data.data(), state.optimizer[k].data.data(),
                      state.optimizer[k].data.size() * sizeof(float)) == 0);
  }
  const std::vector<float> flat = weights(trainer);
  const run::StoreEntry snap = run::write_snapshot_file(dir / "snap.h5", 1, "id", flat, tensors);
  const std::vector<float> params = run::read_store_params(dir / "snap.h5", snap, tensors);
  REQUIRE(params.size() == flat.size());
  CHECK(std::memcmp(params.data(), flat.data(), flat.size() * sizeof(float)) == 0);
}

TEST_CASE("a state written from parts fetched one at a time is the whole state's file, byte for byte") {
  TempDir dir;
  const Config config = tiny(2);
  Trainer trainer(config);
  const auto [state, tensors] = state_after_a_step(config, trainer);
  const run::StoreEntry whole = run::write_state_file(dir / "whole.h5", state, tensors);
  // Parts that hand out each array in a buffer of its own, overwritten by the next fetch (as a
  // pipeline's rank 0 receives them), counting the fetches.
  StateParts parts;
  parts.tensors = tensors.size();
  for (const StateArray& a : state.optimizer) {
    parts.names.push_back(a.name);
    parts.sizes.push_back(a.data.size());
  }
  std::vector<float> held;
  std::vector<int> weight_fetches(tensors.size()), array_fetches(state.optimizer.size());
  parts.weights = [&](size_t t) {
    ++weight_fetches[t];
    held.assign(state.weights.begin() + ptrdiff_t(tensors[t].offset),
                state.weights.begin() + ptrdiff_t(tensors[t].offset + tensors[t].numel));
    return static_cast<const float*>(held.data());
  };
  parts.array = [&](size_t i) {
    ++array_fetches[i];
    held = state.optimizer[i].data;
    return static_cast<const float*>(held.data());
  };
  TrainerState head = state;
  head.weights.clear();
  head.optimizer.clear();
  const run::StoreEntry streamed = run::write_state_file(dir / "streamed.h5", head, parts, tensors);
  CHECK(streamed.digest == whole.digest);
  CHECK(sbt::read_bytes(dir / "streamed.h5") == sbt::read_bytes(dir / "whole.h5"));
  CHECK(std::all_of(weight_fetches.begin(), weight_fetches.end(), [](int n) { return n == 1; }));
  CHECK(std::all_of(array_fetches.begin(), array_fetches.end(), [](int n) { return n == 1; }));

  // Positive control: one value changed in a fetched array gives another file.
  parts.array = [&](size_t i) {
    held = state.optimizer[i].data;
    if (i == 0) held[0] = std::nextafter(held[0], 1.0f);
    return static_cast<const float*>(held.data());
  };
  const run::StoreEntry moved = run::write_state_file(dir / "moved.h5", head, parts, tensors);
  CHECK(moved.digest != whole.digest);

  // A fetch that fails (a stage lost) leaves no file behind.
  parts.weights = [&](size_t) -> const float* { SB_FAIL("stage lost"); };
  CHECK_THROWS_WITH_AS(run::write_state_file(dir / "failed.h5", head, parts, tensors), doctest::Contains("stage lost"),
                       Error);
  CHECK(!fs::exists(dir / "failed.h5"));
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{}) == 3);  // no temporary left
}
