// The run store (core/io/run_*.cpp, checkpoint.cpp) and the diff primitives: the seal catches
// every damaged byte and any truncation; what the writer records is read back bit for bit (series
// rows, tensor table, snapshots, checkpoints, the final state); a resume cuts the series and
// snapshots back; find_resume_point takes the newest good checkpoint and says why it passes over
// others; ULP and tensor distances on known values; docs/FORMAT.md names everything a file holds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/train/run_header.hpp"
#include "samebits/det/fingerprint.hpp"

namespace {

using namespace sb;
using sbt::TempDir;
namespace fs = std::filesystem;

Config tiny() { return cli::config_from_text(sbt::tiny_config(), {}); }

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void flip_byte(const std::string& path, size_t at) {
  std::vector<char> bytes = sbt::read_bytes(path);
  bytes[at] = char(bytes[at] ^ 0x5a);
  sbt::write_bytes(path, bytes);
}

}  // namespace

TEST_CASE("seal: every flipped byte and every truncation is detected; unseal restores the file") {
  TempDir dir;
  const std::string path = dir / "x.h5";
  {
    h5::File f = h5::File::create_in_memory(path);
    f.write_dataset<float>("a", std::vector<float>{1, 2, 3});
    f.set_attr("note", "hello");
    const auto image = f.image();
    f.close();
    run::write_sealed_file(path, image);
  }
  run::check_seal(path);
  const std::vector<char> good = sbt::read_bytes(path);
  REQUIRE(good.size() > run::kSealBytes);
  CHECK(h5::File::open(path).dataset("a").read<float>() == std::vector<float>{1, 2, 3});  // HDF5 reads it

  for (size_t at = 0; at < good.size(); at += std::max<size_t>(1, good.size() / 97)) {
    flip_byte(path, at);
    CHECK_THROWS_WITH_AS(run::check_seal(path), doctest::Contains("damaged"), Error);
    sbt::write_bytes(path, good);
  }
  for (size_t at = good.size() - run::kSealBytes; at < good.size(); ++at) {  // the seal itself
    flip_byte(path, at);
    CHECK_THROWS_AS(run::check_seal(path), Error);
    sbt::write_bytes(path, good);
  }
  for (size_t keep : {size_t(0), size_t(5), good.size() / 2, good.size() - 1}) {
    sbt::write_bytes(path, std::vector<char>(good.begin(), good.begin() + std::ptrdiff_t(keep)));
    CHECK_THROWS_WITH_AS(run::check_seal(path), doctest::Contains(path.c_str()), Error);
  }
  sbt::write_bytes(path, good);
  run::unseal_file(path);
  CHECK(sbt::read_bytes(path).size() == good.size() - run::kSealBytes);
  CHECK_THROWS_AS(run::check_seal(path), Error);
  run::seal_file(path);
  CHECK(sbt::read_bytes(path) == good);
  CHECK_THROWS_WITH_AS(run::seal_file(path), doctest::Contains("already sealed"), Error);
  CHECK_THROWS_WITH_AS(run::check_seal(dir / "missing.h5"), doctest::Contains("missing.h5"), Error);
}

TEST_CASE("run file: rows, tensor table, snapshots and final state read back bit for bit") {
  TempDir dir;
  Config config = tiny();
  config.train.steps = 6;
  Trainer trainer(config);
  const run::RunHeader header = sb::run_header(config, trainer);
  const std::string path = dir / "sub/run.h5";
  run::RunWriter w = run::RunWriter::create(path, header);
  CHECK_THROWS_WITH_AS(run::RunWriter::create(path, header), doctest::Contains("already exists"), Error);

  const auto weights = [&] {
    std::vector<float> v(trainer.model().flat_size());
    trainer.backend().copy_to_host(v.data(), trainer.model().weights().data(), v.size() * 4);
    return v;
  };
  const std::vector<float> init = weights();
  w.snapshot(0, init);
  std::vector<StepResult> results;
  std::vector<float> after3;
  for (int s = 1; s <= 6; ++s) {
    results.push_back(trainer.step());
    w.record(results.back());
    if (s == 3) {
      after3 = weights();
      w.snapshot(3, after3);
      w.checkpoint(trainer.export_state());
      // The state of step 3 serves as its snapshot: the snapshot file goes once the index says so.
      CHECK(fs::exists(dir / "sub/run.store/state_step_000003.h5"));
      CHECK_FALSE(fs::exists(dir / "sub/run.store/snapshot_step_000003.h5"));
    }
  }
  CHECK(w.steps_recorded() == 6);
  const TrainerState final_state = trainer.export_state();
  w.finish(final_state);
  // The store keeps the snapshots (the state of step 3 is the snapshot of step 3) and the final state.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(run::store_dir(path))) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"snapshot_step_000000.h5", "state_step_000003.h5", "state_step_000006.h5"});

  const run::RunReader r = run::RunReader::open(path);
  CHECK(r.info().status == run::Status::finished);
  CHECK(r.info().experiment_id == header.experiment_id);
  CHECK(r.info().config_text == header.config_text);
  CHECK(r.tensors() == header.tensors);
  REQUIRE(r.steps_recorded() == 6);
  std::vector<float> loss, val;
  std::vector<uint64_t> param_fp, grad_fp;
  std::vector<float> grad_max;
  for (const StepResult& x : results) {
    loss.push_back(x.stats.loss);
    val.push_back(x.stats.val_loss);
    param_fp.insert(param_fp.end(), x.param_fingerprints.begin(), x.param_fingerprints.end());
    grad_fp.insert(grad_fp.end(), x.grad_fingerprints.begin(), x.grad_fingerprints.end());
    for (const TensorStats& t : x.stats.tensors) grad_max.push_back(t.grad_max);
  }
  CHECK(same_bits(r.series<float>("series/loss"), loss));
  CHECK(same_bits(r.series<float>("series/val_loss"), val));
  CHECK(same_bits(r.series<uint64_t>("series/param_fingerprint"), param_fp));
  CHECK(same_bits(r.series<uint64_t>("series/grad_fingerprint"), grad_fp));
  CHECK(same_bits(r.series<float>("series/per_tensor/grad_max"), grad_max));
  CHECK(r.series<int64_t>("series/step") == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  // Every column's bytes are what the schema's append produces from the same results.
  for (const run::SeriesColumn& c : run::series_columns()) {
    if (!c.experiment || !run::column_recorded(c, r.shape())) continue;  // QK-clip's: not in this run
    std::vector<std::byte> expected;
    for (const StepResult& x : results) c.append(x, header.tensors.size(), expected);
    CHECK_MESSAGE(same_bits(r.series_bytes(c), expected), c.path);
  }
  CHECK(r.snapshot_steps() == std::vector<int64_t>{0, 3});
  CHECK(same_bits(r.read_snapshot(0), init));
  CHECK(same_bits(r.read_snapshot(3), after3));
  const TrainerState back = r.read_final_state();
  CHECK(back.step == 6);
  CHECK(back.updates == final_state.updates);
  CHECK(back.cursor == final_state.cursor);
  CHECK(same_bits(back.weights, final_state.weights));
  REQUIRE(back.optimizer.size() == final_state.optimizer.size());
  for (size_t i = 0; i < back.optimizer.size(); ++i) {
    CHECK(back.optimizer[i].name == final_state.optimizer[i].name);
    CHECK(same_bits(back.optimizer[i].data, final_state.optimizer[i].data));
  }
  for (const run::TensorInfo& t : r.tensors()) {
    CHECK(det::fingerprint(back.weights.data() + t.offset, t.numel) ==
          results.back().param_fingerprints[size_t(&t - r.tensors().data())]);
  }
}

TEST_CASE("resume: the series and later snapshots are cut back; find_resume_point falls back past damage") {
  TempDir dir;
  Config config = tiny();
  config.train.steps = 8;
  Trainer trainer(config);
  const run::RunHeader header = sb::run_header(config, trainer);
  const std::string path = dir / "run.h5";
  run::RunWriter w = run::RunWriter::create(path, header);
  std::vector<TrainerState> states;  // states[s - 1]: after step s
  for (int s = 1; s <= 6; ++s) {
    w.record(trainer.step());
    states.push_back(trainer.export_state());
    w.checkpoint(states.back());
    if (s % 2 == 0) {
      std::vector<float> v(trainer.model().flat_size());
      trainer.backend().copy_to_host(v.data(), trainer.model().weights().data(), v.size() * 4);
      w.snapshot(s, v);
    }
  }
  w.commit();
  // The last two checkpoints stay, and those that are snapshots; 1 and 3 went.
  const auto state_steps = [&] { return run::RunReader::open(path).state_steps(); };
  CHECK(state_steps() == std::vector<int64_t>{2, 4, 5, 6});
  CHECK(run::RunReader::open(path).snapshot_steps() == std::vector<int64_t>{2, 4, 6});
  CHECK_FALSE(fs::exists(dir / "run.store/state_step_000001.h5"));
  CHECK_FALSE(fs::exists(dir / "run.store/state_step_000003.h5"));
  CHECK(run::store_dir(path) == dir / "run.store");
  const run::StoreEntry six{6, run::kStateBit, 0, 0};
  CHECK(run::store_file(path, six) == dir / "run.store/state_step_000006.h5");
  CHECK(run::step_name(42) == "step_000042");
  CHECK(run::step_name(12345678) == "step_12345678");

  int accepted = 0;
  const auto accept = [&](const TrainerState&) { ++accepted; };
  run::ResumePoint p = run::find_resume_point(path, header, accept);
  CHECK(p.step == 6);
  CHECK(p.notes.empty());
  CHECK(accepted == 1);

  // Newest damaged: fall back to 5 and say so.
  const std::string newest = dir / "run.store/state_step_000006.h5";
  const std::vector<char> good6 = sbt::read_bytes(newest);
  flip_byte(newest, good6.size() / 2);
  p = run::find_resume_point(path, header, accept);
  CHECK(p.step == 5);
  REQUIRE(p.notes.size() == 1);
  CHECK(p.notes[0].find("state_step_000006.h5 is not usable") != std::string::npos);
  CHECK(p.notes[0].find("damaged") != std::string::npos);
  // A checkpoint the importer refuses is passed over too.
  p = run::find_resume_point(path, header, [](const TrainerState& s) { SB_CHECK(s.step > 5, "refused"); });
  CHECK(p.step == 0);
  CHECK(p.source.empty());
  CHECK(p.notes.size() == 4);

  // A sealed, readable state of the right experiment but another run in the place of step 5:
  // the index's content hash refuses it.
  TrainerState foreign = states[4];
  foreign.weights[0] = std::nextafter(foreign.weights[0], 1.0f);
  const std::string five = dir / "run.store/state_step_000005.h5";
  const std::vector<char> good5 = sbt::read_bytes(five);
  run::write_state_file(five, foreign, header.tensors);
  p = run::find_resume_point(path, header, accept);
  CHECK(p.step == 4);
  CHECK(p.notes.back().find("not the file the run file's index names") != std::string::npos);
  sbt::write_bytes(five, good5);
  sbt::write_bytes(newest, good6);

  // Cut back to 4: rows 5-6, the states 5 and 6 and the snapshot of step 6 go, with their files.
  run::RunWriter::resume(path, header, 4, "test");
  const run::RunReader r = run::RunReader::open(path);
  CHECK(r.steps_recorded() == 4);
  CHECK(r.snapshot_steps() == std::vector<int64_t>{2, 4});
  CHECK(r.state_steps() == std::vector<int64_t>{2, 4});
  CHECK_FALSE(fs::exists(five));
  CHECK_FALSE(fs::exists(newest));
  CHECK(r.info().status == run::Status::running);
  CHECK(r.info().time_sessions.find("resume at step 4") != std::string::npos);
  const TrainerState back = r.read_state(4);
  CHECK(same_bits(back.weights, states[3].weights));

  // Another experiment cannot resume this file.
  run::RunHeader other = header;
  other.experiment_id = "0000000000000000";
  CHECK_THROWS_WITH_AS(run::find_resume_point(path, other, accept), doctest::Contains("records experiment"), Error);
}

TEST_CASE("ulp_distance and tensor_distance on known values") {
  using cli::ulp_distance;
  CHECK(ulp_distance(1.0f, 1.0f) == 0);
  CHECK(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance(1.0f, 2.0f) == (uint64_t(1) << 23));
  CHECK(ulp_distance(0.0f, -0.0f) == 0);
  const float tiny_pos = std::numeric_limits<float>::denorm_min();
  CHECK(ulp_distance(-tiny_pos, tiny_pos) == 2);
  CHECK(ulp_distance(-1.0f, 1.0f) == 2 * uint64_t(0x3f800000));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(ulp_distance(nan, 1.0f) == cli::kUlpNaN);
  CHECK(ulp_distance(nan, nan) == 0);  // same encoding

  const std::vector<float> a{1, 2, 3, 4}, b{1, std::nextafter(2.0f, 3.0f), 3, 4.5f};
  const cli::TensorDistance t = cli::tensor_distance("t", a, b);
  CHECK(t.differing == 2);
  CHECK(t.fraction() == 0.5);
  CHECK(t.first_differing == 1);
  CHECK(t.max_ulp == cli::ulp_distance(4.0f, 4.5f));
  const double d1 = double(std::nextafter(2.0f, 3.0f)) - 2.0;
  CHECK(t.rel_l2 == std::sqrt(d1 * d1 + 0.25) / std::sqrt(30.0));
  CHECK(cli::tensor_distance("same", a, a).rel_l2 == 0);
}

TEST_CASE("config_from_text gives back the resolved config; the schema's columns are unique") {
  Config config = tiny();
  config.optim.lr = 0.0123;
  CHECK(cli::config_from_text(to_ini_text(config), {}) == config);
  CHECK_THROWS_WITH_AS(cli::config_from_text("[model]\nn_embd = abc\n", {}), doctest::Contains("model.n_embd"), Error);
  std::set<std::string_view> paths;
  for (const run::SeriesColumn& c : run::series_columns()) CHECK(paths.insert(c.path).second);
  for (const char* p :
       {"series/loss", "series/val_loss", "series/lr", "series/adam_lr", "series/grad_norm", "series/param_fingerprint",
        "series/grad_fingerprint", "series/per_tensor/update_rms", "series/per_tensor/ortho_error",
        "series/noise_scale", "series/comm_bytes", "series/tokens", "timing/step_seconds"}) {
    CHECK_MESSAGE(paths.count(p) == 1, p);
  }
}

TEST_CASE("docs/FORMAT.md names every series column and every attribute a run file has") {
  const fs::path doc = fs::path(__FILE__).parent_path().parent_path().parent_path() / "docs" / "FORMAT.md";
  std::ifstream in(doc);
  REQUIRE_MESSAGE(in.good(), doc.string());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const run::SeriesColumn& c : run::series_columns()) {
    CHECK_MESSAGE(text.find("`" + std::string(c.path) + "`") != std::string::npos, c.path);
  }
  TempDir dir;
  Config config = tiny();
  Trainer trainer(config);
  const std::string path = dir / "run.h5";
  run::RunWriter w = run::RunWriter::create(path, sb::run_header(config, trainer));
  w.record(trainer.step());
  w.snapshot(1, std::vector<float>(trainer.model().flat_size()));
  w.checkpoint(trainer.export_state());
  const h5::File f = h5::File::open(path);
  for (const std::string& a : f.attr_names()) CHECK_MESSAGE(text.find("`" + a + "`") != std::string::npos, a);
  for (const std::string& a : f.group("snapshots/step_000001").attr_names())
    CHECK(text.find("`" + a + "`") != std::string::npos);
  const h5::File c = h5::File::open(run::store_file(path, run::StoreEntry{1, run::kStateBit, 0, 0}));
  for (const std::string& a : c.attr_names()) CHECK_MESSAGE(text.find(a) != std::string::npos, a);
  for (const std::string& name : f.group("tensors").names()) CHECK(text.find("`" + name + "`") != std::string::npos);
}
