// Negative controls of the resume tests: a resume that loses one piece of the state must be caught.
// A run stopped after step 3 resumes from its checkpoint, once as written (IDENTICAL to the
// uninterrupted run: the positive test) and once per piece with that piece reset to what a resume
// that forgot it would hold: an optimizer moment (zeros), the update count (0: AdamW's bias
// correction restarts) and the fp16 loss scale (the configured initial scale, its good-step count
// 0) — each reported DIFFERENT by `samebits diff`. The data position cannot be lost unseen: the
// sampler makes the cursor a function of the step, and the store index records each file's step,
// so a checkpoint whose cursor is not its step's, or whose step (with cursor and update count) is
// reset, is refused by name by the rank that reads it and passed over for an earlier state, at
// any world size. Three kinds, as the resume tests: one process; 2 ranks resumed at 3;
// DP 1 × TP 2 × PP 2 resumed in one process.
// The sampler is the only randomness a step consumes: there is no other RNG state to drop.
// Skipped (exit 77) without mpirun or MPI in this build.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "integration/layout_runs.hpp"
#include "integration/run_file_edit.hpp"

namespace {

using namespace sbt;

const char* kConfig =
    "[model]\nvocab = 64\nseq_len = 8\nn_layer = 2\nn_head = 2\nn_embd = 16\n"
    "[data]\nleaf_size = 1\nleaves = 6\n"
    "[train]\nsteps = 6\nwarmup = 2\ncheckpoint_every = 3\n"
    "[run]\nthreads = 1\nlog_every = 100\nprogress = off\n";

// fp16 from a scale that overflows: the first steps are skipped and back the scale off, so the
// scale at step 3 is not the initial one, and its growth interval makes the good-step count matter.
const char* kFp16 = "--train.precision fp16 --train.loss_scale 16777216 --train.loss_scale_growth_interval 2";

// One piece of a checkpoint reset in the state file of `step`.
enum class Piece { cursor_alone, data_position, moment, updates, loss_scale };

const char* name(Piece p) {
  switch (p) {
    case Piece::cursor_alone: return "data cursor alone";
    case Piece::data_position: return "data position";
    case Piece::moment: return "optimizer moment";
    case Piece::updates: return "update count";
    case Piece::loss_scale: return "loss scale";
  }
  return "?";
}

void drop(const std::string& run_path, int64_t step, Piece piece) {
  edit_store_file(run_path, step, [&](sb::h5::File& f) {
    switch (piece) {
      case Piece::cursor_alone:
        REQUIRE(f.attr_uint("cursor_position") != 0);
        f.set_attr("cursor_position", uint64_t{0});
        break;
      case Piece::data_position:
        f.set_attr("cursor_epoch", uint64_t{0});
        f.set_attr("cursor_position", uint64_t{0});
        f.set_attr("step", int64_t{0});
        f.set_attr("updates", int64_t{0});
        break;
      case Piece::moment: {
        const std::string names = f.group("optimizer").attr_string("names");
        const std::string first = names.substr(0, names.find('\n'));
        sb::h5::Dataset d = f.dataset("optimizer/" + first);
        const std::vector<float> was = d.read<float>();
        REQUIRE(std::any_of(was.begin(), was.end(), [](float v) { return v != 0.0f; }));
        d.write<float>(std::vector<float>(was.size(), 0.0f));
        break;
      }
      case Piece::updates:
        REQUIRE(f.attr_int("updates") != 0);
        f.set_attr("updates", int64_t{0});
        break;
      case Piece::loss_scale:
        REQUIRE(f.attr_double("loss_scale") != 16777216.0);
        f.set_attr("loss_scale", 16777216.0);
        f.set_attr("loss_scale_good_steps", int64_t{0});
        break;
    }
  });
}

// `samebits diff` of two runs in dir: its exit code (0 identical, 1 different).
int diff_code(const TempDir& dir, const std::string& a, const std::string& b) {
  const Result r = run({"diff", dir / a, dir / b});
  CHECK_MESSAGE((r.code == 0 || r.code == 1), r.output);
  if (r.code == 1) CHECK(r.output.find("DIFFERENT") != std::string::npos);
  return r.code;
}

// Stops `stop` (ranks, layout) after step 3, then resumes copies with `resume` (ranks, layout):
// untouched (IDENTICAL to ref) and with each piece dropped (DIFFERENT).
struct Layout {
  int ranks;
  std::string layout;
};
void check_resumes(const TempDir& dir, const std::string& tag, const std::string& numerics, Layout stop, Layout resume,
                   const std::vector<Piece>& pieces) {
  const std::string ref = tag + "-ref.h5", stopped = tag + "-stopped.h5";
  train_one(dir, "neg.ini", ref, numerics);
  const std::string stop_args = stop.layout + " " + numerics + " --out " + stopped + " --stop-after 3";
  if (stop.ranks == 1) train_one(dir, "neg.ini", stopped, stop.layout + " " + numerics + " --stop-after 3");
  else train_mpi_ok(dir, stop.ranks, "neg.ini", stop_args);
  // The resume of `out`: its exit code and output.
  const auto resumed = [&](const std::string& out) {
    const std::string args = resume.layout + " " + numerics + " --resume --out " + out;
    if (resume.ranks > 1) return train_mpi(dir, resume.ranks, "neg.ini", args);
    std::vector<std::string> argv{"train", "neg.ini"};
    std::istringstream in(args);
    for (std::string a; in >> a;) argv.push_back(a);
    const Result r = run(argv, SpawnOptions{0, dir.path.string()});
    return sb::test::Launch{r.code, r.output};
  };
  const std::string kept = tag + "-kept.h5";
  copy_run(dir / stopped, dir / kept);
  const sb::test::Launch ok = resumed(kept);
  REQUIRE_MESSAGE(ok.exit_code == 0, ok.output);
  CHECK(diff_code(dir, ref, kept) == 0);
  for (Piece p : pieces) {
    CAPTURE(std::string(name(p)));
    const std::string out = tag + "-" + std::to_string(int(p)) + ".h5";
    copy_run(dir / stopped, dir / out);
    drop(dir / out, 3, p);
    const sb::test::Launch r = resumed(out);
    if (p == Piece::cursor_alone || p == Piece::data_position) {
      // Refused: the store file's step is checked against the index, its cursor against its step,
      // by the rank that reads it (Trainer::check_state), which passes it over for an earlier
      // state (here the initialisation) and so retrains the same bits, at any world size.
      CHECK_MESSAGE(
          r.output.find(p == Piece::cursor_alone ? "checkpoint data cursor (epoch 0, position 0) is the start "
                                                   "of step 0, but the checkpoint is after step 3"
                                                 : "holds step 0, the index says 3") != std::string::npos,
          r.output);
      CHECK_MESSAGE(r.exit_code == 0, r.output);
      CHECK(r.output.find("falling back to the previous one") != std::string::npos);
      CHECK(diff_code(dir, ref, out) == 0);
      continue;
    }
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK(diff_code(dir, ref, out) == 1);
  }
}

const std::vector<Piece> kFp32Pieces = {Piece::cursor_alone, Piece::data_position, Piece::moment, Piece::updates};

}  // namespace

TEST_CASE("one process: a resume that drops a moment, the update count or the loss scale is DIFFERENT") {
  TempDir dir;
  write_text(dir / "neg.ini", kConfig);
  check_resumes(dir, "one", "", {1, ""}, {1, ""}, kFp32Pieces);
  check_resumes(dir, "fp16", kFp16, {1, ""}, {1, ""}, {Piece::loss_scale});
}

TEST_CASE("across world sizes (2 ranks, then 3): a resume that drops a piece of state is DIFFERENT") {
  TempDir dir;
  write_text(dir / "neg.ini", kConfig);
  check_resumes(dir, "ws", "", {2, ""}, {3, ""}, kFp32Pieces);
  check_resumes(dir, "ws16", kFp16, {2, ""}, {3, ""}, {Piece::loss_scale});
}

TEST_CASE("across layouts (TP 2 x PP 2, then one process): a resume that drops a piece of state is DIFFERENT") {
  TempDir dir;
  write_text(dir / "neg.ini", kConfig);
  const Layout layout{4, "--parallel.tp 2 --parallel.pp 2"};
  check_resumes(dir, "layout", "", layout, {1, ""}, kFp32Pieces);
  check_resumes(dir, "layout16", kFp16, layout, {1, ""}, {Piece::loss_scale});
}
