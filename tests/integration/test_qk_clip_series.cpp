// The QK-clip series of the run file (docs/FORMAT.md: series/qk_max_logit, series/qk_clipped): a
// tiny run with optim.qk_clip low enough to clip records every step's per-head maxima and clipped
// count bit for bit as the Trainer returned them (memcmp); `samebits train` stopped mid-run and
// resumed writes the same bits as an uninterrupted run (`samebits diff` says identical, `samebits
// verify` recomputes them); an
// fp16 step skipped for an overflow records its maxima and clips nothing; a run
// without QK-clip has neither dataset; files whose QK-clip datasets are damaged (wrong shape,
// one missing, attribute n_head wrong) are refused with an error naming the dataset.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "integration/test_damaged_files.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/train/run_header.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

using namespace sbt;

// Below the tiny model's largest logits after a few steps, so the clip acts (checked).
const std::string kQkConfig = tiny_config() + "[optim]\nqk_clip = 0.02\n";

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

struct Recorded {
  std::vector<float> maxima;     // (steps, heads)
  std::vector<int64_t> clipped;  // (steps)
};

Recorded read_series(const std::string& path) {
  const sb::run::RunReader r = sb::run::RunReader::open(path);
  return {r.series<float>("series/qk_max_logit"), r.series<int64_t>("series/qk_clipped")};
}

}  // namespace

TEST_CASE("qk_clip: the run file records every step's per-head maxima and clipped count, bit for bit") {
  TempDir dir;
  const sb::Config config = sb::cli::config_from_text(kQkConfig, {});
  REQUIRE(config.optim.qk_clip > 0.0);
  sb::Trainer trainer(config);
  const std::string path = dir / "qk.h5";
  sb::run::RunWriter w = sb::run::RunWriter::create(path, sb::run_header(config, trainer));
  Recorded expected;
  const size_t heads = size_t(config.model.n_layer * config.model.n_head);
  while (!trainer.finished()) {
    const sb::StepResult r = trainer.step();
    REQUIRE(r.stats.qk_max_logits.size() == heads);
    expected.maxima.insert(expected.maxima.end(), r.stats.qk_max_logits.begin(), r.stats.qk_max_logits.end());
    expected.clipped.push_back(r.stats.qk_clipped);
    w.record(r);
  }
  w.finish(trainer.export_state());

  int64_t clips = 0;
  for (int64_t c : expected.clipped) clips += c;
  CHECK(clips > 0);  // the clip acts in this run
  const sb::run::RunReader r = sb::run::RunReader::open(path);
  CHECK(r.shape().heads == heads);
  const Recorded got = read_series(path);
  CHECK(same_bits(got.maxima, expected.maxima));
  CHECK(same_bits(got.clipped, expected.clipped));
  {  // (h5 files closed before the next RunReader::open: its reader process opens them again)
    const sb::h5::File f = sb::h5::File::open(path);
    CHECK(f.dataset("series/qk_max_logit").shape() == sb::h5::Dims{uint64_t(config.train.steps), heads});
    CHECK(f.dataset("series/qk_max_logit").attr_int("n_head") == config.model.n_head);
  }

  // Without QK-clip the file has neither dataset, and reading one is an error naming it.
  sb::Config plain = config;
  plain.optim.qk_clip = 0.0;
  sb::Trainer t0(plain);
  const std::string plain_path = dir / "plain.h5";
  sb::run::RunWriter w0 = sb::run::RunWriter::create(plain_path, sb::run_header(plain, t0));
  w0.record(t0.step());
  w0.commit();
  {
    const sb::h5::File f0 = sb::h5::File::open(plain_path);
    CHECK_FALSE(f0.has("series/qk_max_logit"));
    CHECK_FALSE(f0.has("series/qk_clipped"));
  }
  const sb::run::RunReader r0 = sb::run::RunReader::open(plain_path);
  CHECK(r0.shape().heads == 0);
  CHECK_THROWS_WITH_AS(r0.series<float>("series/qk_max_logit"), doctest::Contains("series/qk_max_logit"), sb::Error);
}

TEST_CASE("qk_clip in fp16: a skipped step records its maxima and clips nothing") {
  TempDir dir;
  sb::Config config = sb::cli::config_from_text(kQkConfig, {});
  config.train.precision = sb::Precision::fp16;
  config.train.loss_scale = 16777216.0;  // 2^24: the first steps overflow and are skipped
  config.train.steps = 6;
  sb::Trainer trainer(config);
  sb::run::RunWriter w = sb::run::RunWriter::create(dir / "fp16.h5", sb::run_header(config, trainer));
  Recorded expected;
  int skipped = 0;
  while (!trainer.finished()) {
    const sb::StepResult r = trainer.step();
    REQUIRE(r.stats.qk_max_logits.size() == size_t(config.model.n_layer * config.model.n_head));
    if (r.stats.skipped) {
      ++skipped;
      CHECK(r.stats.qk_clipped == 0);
    }
    expected.maxima.insert(expected.maxima.end(), r.stats.qk_max_logits.begin(), r.stats.qk_max_logits.end());
    expected.clipped.push_back(r.stats.qk_clipped);
    w.record(r);
  }
  w.commit();
  CHECK(skipped > 0);
  const Recorded got = read_series(dir / "fp16.h5");
  CHECK(same_bits(got.maxima, expected.maxima));
  CHECK(same_bits(got.clipped, expected.clipped));
}

TEST_CASE("qk_clip: samebits train stopped and resumed writes the uninterrupted run's QK-clip series") {
  TempDir dir;
  write_text(dir / "qk.ini", kQkConfig);
  const SpawnOptions here{0, dir.path.string()};
  Result a = run({"train", "qk.ini", "--out", "whole.h5"}, here);
  REQUIRE_MESSAGE(a.code == 0, describe(a));
  Result b = run({"train", "qk.ini", "--out", "resumed.h5", "--stop-after", "7"}, here);
  REQUIRE_MESSAGE(b.code == 0, describe(b));
  CHECK(sb::run::RunReader::open(dir / "resumed.h5").steps_recorded() == 7);
  b = run({"train", "qk.ini", "--out", "resumed.h5", "--resume"}, here);
  REQUIRE_MESSAGE(b.code == 0, describe(b));
  const Recorded whole = read_series(dir / "whole.h5"), resumed = read_series(dir / "resumed.h5");
  CHECK(whole.maxima.size() == 20 * 2);
  CHECK(same_bits(whole.maxima, resumed.maxima));
  CHECK(same_bits(whole.clipped, resumed.clipped));
  const Result diff = run({"diff", dir / "whole.h5", dir / "resumed.h5"});
  CHECK_MESSAGE(diff.code == 0, describe(diff));
  const Result verify = run({"verify", dir / "whole.h5"});  // recomputes every row, the QK-clip columns too
  CHECK_MESSAGE(verify.code == 0, describe(verify));
  const Result inspect = run({"inspect", dir / "whole.h5"});
  CHECK_MESSAGE(inspect.output.find("qk-clip      largest logit") != std::string::npos, inspect.output);

  // diff names the QK-clip column when the maxima differ (here: a run without QK-clip).
  Result plain = run({"train", "qk.ini", "--out", "plain.h5", "--optim.qk_clip", "0"}, here);
  REQUIRE_MESSAGE(plain.code == 0, describe(plain));
  const Result differ = run({"diff", dir / "whole.h5", dir / "plain.h5"});
  CHECK(differ.code == 1);
  CHECK_MESSAGE(differ.output.find("series/qk_max_logit") != std::string::npos, differ.output);
}

TEST_CASE("qk_clip: damaged QK-clip datasets are refused with an error naming the dataset") {
  TempDir dir;
  write_text(dir / "qk.ini", kQkConfig);
  const Result a = run({"train", "qk.ini", "--out", "qk.h5", "--train.steps", "3"}, SpawnOptions{0, dir.path.string()});
  REQUIRE_MESSAGE(a.code == 0, describe(a));
  const std::string source = dir / "qk.h5";
  struct Case {
    const char* what;
    const char* named;  // in the error
    std::function<void(sb::h5::File&)> edit;
  };
  const auto recreate = [](sb::h5::File& f, const char* path, sb::h5::DType dtype, sb::h5::Dims shape, int64_t n_head) {
    f.remove(path);
    sb::h5::Dataset d = f.create_dataset(path, dtype, shape);
    if (n_head > 0) d.set_attr("n_head", n_head);
  };
  const std::vector<Case> cases = {
      {"one head too many", "series/qk_max_logit",
       [&](sb::h5::File& f) {
         recreate(f, "series/qk_max_logit", sb::h5::DType::f32, {3, 3}, 2);
       }},
      {"one row too few", "series/qk_max_logit",
       [&](sb::h5::File& f) {
         recreate(f, "series/qk_max_logit", sb::h5::DType::f32, {2, 2}, 2);
       }},
      {"rank 1", "series/qk_max_logit",
       [&](sb::h5::File& f) { recreate(f, "series/qk_max_logit", sb::h5::DType::f32, {3}, 2); }},
      {"float64", "series/qk_max_logit",
       [&](sb::h5::File& f) {
         recreate(f, "series/qk_max_logit", sb::h5::DType::f64, {3, 2}, 2);
       }},
      {"n_head 3 (does not divide C = 32)", "series/qk_max_logit",
       [&](sb::h5::File& f) { f.dataset("series/qk_max_logit").set_attr("n_head", int64_t{3}); }},
      {"n_head 0", "series/qk_max_logit",
       [&](sb::h5::File& f) { f.dataset("series/qk_max_logit").set_attr("n_head", int64_t{0}); }},
      {"n_head missing", "series/qk_max_logit",
       [&](sb::h5::File& f) { f.dataset("series/qk_max_logit").remove_attr("n_head"); }},
      {"qk_clipped missing", "series/qk_clipped", [&](sb::h5::File& f) { f.remove("series/qk_clipped"); }},
      {"qk_max_logit missing", "series/qk_clipped", [&](sb::h5::File& f) { f.remove("series/qk_max_logit"); }},
      {"qk_clipped of 2 columns", "series/qk_clipped",
       [&](sb::h5::File& f) {
         recreate(f, "series/qk_clipped", sb::h5::DType::i64, {3, 2}, 0);
       }},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string path = dir / ("bad" + std::to_string(n++) + ".h5");
    edited_copy(source, path, c.edit);
    CHECK_THROWS_WITH_AS(sb::run::RunReader::open(path), doctest::Contains(c.named), sb::Error);
    const Result r = run({"inspect", path});
    CHECK_MESSAGE(r.code == 2, c.what, ": ", describe(r));
    CHECK_MESSAGE(r.output.find(c.named) != std::string::npos, c.what, ": ", r.output);
  }
}
