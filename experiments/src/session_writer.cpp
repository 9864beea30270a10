// session_writer.hpp: RunFileWriter forwards to run::RunWriter (store files written in the
// background while the next steps run; the run file committed at checkpoints, when pending rows
// grow large, and at the end); NullWriter does nothing. No numerics here.
#include "session_writer.hpp"

#include <cstdio>
#include <filesystem>

#include "samebits/cli/data_provenance.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

// Pending rows beyond this many bytes are committed before the next checkpoint.
constexpr std::size_t kCommitBytes = std::size_t{64} << 20;

// Rank 0's: every call but open(), fail() and mark_stuck() comes after open() found a run to train.
class RunFileWriter final : public SessionWriter {
 public:
  explicit RunFileWriter(std::ostream& log) : log_(log) {}

  std::ostream& log() override { return log_; }
  bool progress_bar(Progress progress) const override { return progress_bar_wanted(progress); }

  void open(const std::string& path, const run::RunHeader& header, bool resume, Trainer& trainer,
            std::optional<TrainerState>& chosen, TrainRunResult& result) override {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      if (resume) log_ << "resume: no run file at " << path << "; starting a new run\n";
      start(run::RunWriter::create(path, header));
      return;
    }
    SB_CHECK(resume, "run file '", path,
             "' already exists: continue it with --resume, or choose another "
             "--out (samebits never overwrites a run)");
    check_same_data(path, header.data_files);
    const bool alone = trainer.communicator().size() == 1;
    const run::ResumePoint point = run::find_resume_point(path, header, [&](const TrainerState& s) {
      if (alone) {
        trainer.import_state(s);
      } else {  // refused here, as import_state would refuse it after the broadcast: the next one is tried
        trainer.check_state(s);
        chosen = s;
      }
    });
    for (const std::string& note : point.notes) log_ << "resume: " << escape_untrusted(note) << "\n";
    if (point.finished) {  // a kill right after the last commit may have left the rolling states
      run::remove_unindexed_files(path, run::RunReader::open(path).store_entries());
      result.already_finished = true;
      result.first_step = result.steps_done = point.step;
      return;
    }
    if (point.source.empty()) chosen.reset();
    const std::string note = point.source.empty() ? "no usable checkpoint; restarted from the initialisation"
                                                  : "from checkpoint " + point.source;
    log_ << "resume: " << path << " at step " << point.step << " (" << note << ")\n";
    result.first_step = point.step;
    start(run::RunWriter::resume(path, header, point.step, note));
  }

  TrainerState spare_state() override {
    run_->wait_store();
    return run_->take_spare_state();
  }
  void record(const StepResult& r) override { run_->record(r); }
  void snapshot(int64_t step, const std::function<std::vector<float>()>& flat_weights) override {
    run_->snapshot(step, flat_weights);
  }
  void checkpoint(TrainerState state, bool kept) override { run_->checkpoint(std::move(state), kept); }
  void checkpoint(const TrainerState& head, const StateParts& parts, bool kept) override {
    run_->checkpoint(head, parts, kept);
  }
  void commit_if_large() override {
    if (run_->pending_bytes() > kCommitBytes) run_->commit();
  }
  void finish(TrainerState state, bool snapshot) override { run_->finish(std::move(state), snapshot); }
  void finish(const TrainerState& head, const StateParts& parts, bool snapshot) override {
    run_->finish(head, parts, snapshot);
  }
  void fail(const std::string& message) override {
    if (run_) run_->fail(message);
  }
  void mark_stuck(const std::string& why) override {
    if (!run_) return;
    try {
      run_->fail(resumable_failure(why, run_->steps_recorded()));
    } catch (const Error& e) {
      std::fprintf(stderr, "samebits: the run file could not be marked: %s\n", e.what());
    }
  }
  void write_trace(const std::string& path, const std::string& experiment_id,
                   const std::vector<io::TracedStep>& steps) override {
    io::write_trace_file(path, experiment_id, steps);
  }
  uint64_t bytes_written() const override { return run_->bytes_written(); }

 private:
  void start(run::RunWriter writer) {
    run_.emplace(std::move(writer));
    run_->write_in_background(true);  // store files written while the steps go on
  }

  std::ostream& log_;
  std::optional<run::RunWriter> run_;
};

// The other ranks' of a world: they train, gather and export states with rank 0, and write nothing.
class NullWriter final : public SessionWriter {
 public:
  std::ostream& log() override { return silent_; }
  bool progress_bar(Progress) const override { return false; }
  void open(const std::string&, const run::RunHeader&, bool, Trainer&, std::optional<TrainerState>&,
            TrainRunResult&) override {}
  TrainerState spare_state() override { return {}; }
  void record(const StepResult&) override {}
  void snapshot(int64_t, const std::function<std::vector<float>()>&) override {}
  void checkpoint(TrainerState, bool) override {}
  void checkpoint(const TrainerState&, const StateParts&, bool) override {}
  void commit_if_large() override {}
  void finish(TrainerState, bool) override {}
  void finish(const TrainerState&, const StateParts&, bool) override {}
  void fail(const std::string&) override {}
  void mark_stuck(const std::string&) override {}
  void write_trace(const std::string&, const std::string&, const std::vector<io::TracedStep>&) override {}
  uint64_t bytes_written() const override { return 0; }

 private:
  std::ostream silent_{nullptr};
};

}  // namespace

std::unique_ptr<SessionWriter> make_session_writer(bool writes, std::ostream& log) {
  if (writes) return std::make_unique<RunFileWriter>(log);
  return std::make_unique<NullWriter>();
}

std::string resumable_failure(const std::string& why, int64_t step) {
  return why + " after step " + std::to_string(step) + "; continue with samebits train … --resume";
}

}  // namespace sb::cli
