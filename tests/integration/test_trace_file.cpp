// samebits train --trace-steps (TrainRunOptions::trace_steps): the traced run's recorded bits equal
// an untraced run's, its RUN.trace.h5 holds the streams of exactly the traced steps, and each
// stream is the one `samebits trace` replays for that step (hash for hash); a damaged file is an error.
#include <doctest/doctest.h>

#include <sstream>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/det/error.hpp"
#include "support/tiny_gpt.hpp"

namespace {

sb::Config tiny(const std::string& out) {
  sb::test::TinyGpt t;
  t.steps = 4;
  t.warmup = 1;
  t.threads = 2;
  sb::Config c = sb::test::tiny_gpt_config(t);
  c.run.progress = sb::Progress::off;
  c.run.out = out;
  return c;
}

}  // namespace

TEST_CASE("train --trace-steps: the bits of an untraced run, and the streams trace replays") {
  sbt::TempDir dir;
  std::ostringstream log;
  sb::cli::train_run(tiny(dir / "plain.h5"), {}, log);
  sb::cli::TrainRunOptions options;
  options.trace_steps = {2, 4};
  sb::cli::train_run(tiny(dir / "traced.h5"), options, log);
  const sb::run::RunReader plain = sb::run::RunReader::open(dir / "plain.h5");
  const sb::run::RunReader traced = sb::run::RunReader::open(dir / "traced.h5");
  for (const char* column : {"series/param_fingerprint", "series/grad_fingerprint"})
    CHECK(plain.series<uint64_t>(column) == traced.series<uint64_t>(column));
  CHECK(plain.series<float>("series/loss") == traced.series<float>("series/loss"));

  std::string id;
  const std::vector<sb::io::TracedStep> steps =
      sb::io::read_trace_file(sb::io::trace_file_path(dir / "traced.h5"), &id);
  CHECK(id == traced.info().experiment_id);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].step == 2);
  CHECK(steps[1].step == 4);

  const sb::cli::ReplaySetup setup = sb::cli::replay_setup(traced);
  std::string source;
  const sb::TrainerState state = sb::cli::reachable_state(traced, setup, 1, source);
  const std::vector<sb::trace::Row> replayed = sb::cli::replay_stream(setup, state, 2);
  REQUIRE(replayed.size() == steps[0].rows.size());
  for (size_t i = 0; i < replayed.size(); ++i) {
    const sb::trace::Row& a = replayed[i];
    const sb::trace::Row& b = steps[0].rows[i];
    REQUIRE(a.name() == b.name());
    REQUIRE(a.leaf == b.leaf);
    REQUIRE(a.inputs == b.inputs);
    REQUIRE(a.outputs == b.outputs);
    REQUIRE(a.shape == b.shape);
  }
}

TEST_CASE("read_trace_file: a file that is not a trace, or with inconsistent offsets, is an error") {
  sbt::TempDir dir;
  {
    sb::h5::File f = sb::h5::File::create(dir / "other.h5");
    f.set_attr("format", "samebits-run");
    f.close();
  }
  CHECK_THROWS_WITH_AS(sb::io::read_trace_file(dir / "other.h5"), doctest::Contains("not a samebits trace file"),
                       sb::Error);
  sb::trace::Row row;
  row.site = "h.0.ln1 norm forward";
  row.op = "layernorm_forward";
  row.inputs = {1, 2};
  row.outputs = {3};
  sb::io::write_trace_file(dir / "t.trace.h5", "x", {{1, {row}}});
  CHECK(sb::io::read_trace_file(dir / "t.trace.h5").at(0).rows.at(0).name() == row.name());
  {
    sb::h5::File f = sb::h5::File::open(dir / "t.trace.h5", sb::h5::Mode::read_write);
    f.remove("steps/1/inputs_offsets");
    f.write_dataset<uint64_t>("steps/1/inputs_offsets", std::vector<uint64_t>{0, 5});
    f.close();
  }
  CHECK_THROWS_WITH_AS(sb::io::read_trace_file(dir / "t.trace.h5"), doctest::Contains("inputs_offsets"), sb::Error);
  CHECK(sb::trace::unpack(sb::trace::pack({row})).at(0).inputs == row.inputs);
}
