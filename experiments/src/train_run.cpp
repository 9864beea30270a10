// train_run.hpp: the `samebits train` loop over Trainer and RunWriter. The run file is committed
// at each checkpoint, when pending snapshots grow large, and at the end; a resume imports the
// newest good checkpoint, so every recorded bit equals the uninterrupted run's (the trainer's
// contract), whatever the moment the earlier session died.
#include "samebits/cli/train_run.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

// Pending snapshots beyond this many bytes are committed before the next checkpoint.
constexpr std::size_t kCommitBytes = std::size_t{64} << 20;

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int signal) { g_signal = signal; }

// SIGINT and SIGTERM set g_signal while a run trains; the previous handlers come back after.
class StopSignals {
 public:
  StopSignals() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600) std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60), (long long)(s % 60));
  else std::snprintf(text, sizeof text, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return text;
}

std::vector<float> host_weights(Trainer& trainer) {
  std::vector<float> w(trainer.model().flat_size());  // (flat_size)
  trainer.backend().copy_to_host(w.data(), trainer.model().weights().data(), w.size() * sizeof(float));
  return w;
}

run::RunHeader make_header(const Config& config, Trainer& trainer, const TrainRunOptions& options) {
  run::RunHeader h;
  h.config_text = to_ini_text(config);
  h.experiment_id = experiment_id(config);
  h.experiment_text = experiment_text(config);
  h.steps = config.train.steps;
  h.tensors = run::tensor_infos(trainer.model().params());
  h.execution.backend = trainer.backend().describe();
  h.execution.communicator = trainer.communicator().describe();
  h.execution.threads = omp_get_max_threads();
  h.execution.world_size = trainer.communicator().size();
  h.execution.micro_leaves = options.micro_leaves;
  return h;
}

// Opens the run file: a new one, or (--resume) the existing one at its newest good checkpoint;
// nothing when it is finished.
std::optional<run::RunWriter> open_writer(const std::string& path, const run::RunHeader& header, const TrainRunOptions& options,
                           Trainer& trainer, TrainRunResult& result, std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (options.resume) log << "resume: no run file at " << path << "; starting a new run\n";
    return run::RunWriter::create(path, header);
  }
  SB_CHECK(options.resume, "run file '", path, "' already exists: continue it with --resume, or choose another "
           "--out (samebits never overwrites a run)");
  const run::ResumePoint point =
      run::find_resume_point(path, header, [&](const TrainerState& s) { trainer.import_state(s); });
  for (const std::string& note : point.notes) log << "resume: " << note << "\n";
  if (point.finished) {
    std::filesystem::remove_all(run::checkpoint_dir(path), ec);  // left over if a kill came right after the end
    result.already_finished = true;
    result.first_step = result.steps_done = point.step;
    return std::nullopt;
  }
  const std::string note = point.source.empty() ? "no usable checkpoint; restarted from the initialisation"
                                                : "from checkpoint " + point.source;
  log << "resume: " << path << " at step " << point.step << " (" << note << ")\n";
  result.first_step = point.step;
  return run::RunWriter::resume(path, header, point.step, note);
}

}  // namespace

bool progress_bar_wanted(Progress progress) {
  return progress == Progress::on || (progress == Progress::automatic && ::isatty(STDERR_FILENO) == 1);
}

ProgressDisplay::ProgressDisplay(std::ostream& out, bool bar, int64_t every, int64_t first, int64_t total,
                                 const char* what)
    : out_(out), bar_(bar), every_(std::max<int64_t>(1, every)), first_(first), total_(total), what_(what) {}

void ProgressDisplay::update(int64_t step, int64_t tokens, double seconds, float loss, float val_loss) {
  seconds_ += seconds;
  tokens_ += tokens;
  const double rate = seconds_ > 0 ? double(tokens_) / seconds_ : 0;
  const double eta = step > first_ ? seconds_ / double(step - first_) * double(total_ - step) : NAN;
  char val[32] = "";
  if (!std::isnan(val_loss)) std::snprintf(val, sizeof val, "  val %.4f", double(val_loss));
  char line[256];
  if (bar_) {
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && step < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    constexpr int kWidth = 24;
    const int filled = total_ > 0 ? int(kWidth * step / total_) : kWidth;
    const std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '.');
    std::snprintf(line, sizeof line, "\r%s %lld/%lld [%s] loss %.4f%s  %.0f tok/s  ETA %s ", what_,
                  (long long)step, (long long)total_, bar.c_str(), double(loss), val, rate,
                  duration_text(eta).c_str());
    out_ << line << std::flush;
    return;
  }
  if (step % every_ != 0 && step != total_) return;
  std::snprintf(line, sizeof line, "%s %lld/%lld  loss %.6f%s  %.0f tok/s  elapsed %s  ETA %s\n", what_,
                (long long)step, (long long)total_, double(loss), val, rate, duration_text(seconds_).c_str(),
                duration_text(eta).c_str());
  out_ << line << std::flush;
}

void ProgressDisplay::finish() {
  if (bar_ && drawn_) out_ << "\n" << std::flush;
}

TrainRunResult train_run(const Config& config, const TrainRunOptions& options, std::ostream& log) {
  TrainerOptions trainer_options;
  trainer_options.micro_leaves = options.micro_leaves;
  Trainer trainer(config, trainer_options);
  const run::RunHeader header = make_header(config, trainer, options);
  TrainRunResult result;
  result.path = run_path(config);

  const StopSignals stop_signals;
  std::optional<run::RunWriter> writer;
  try {
    writer = open_writer(result.path, header, options, trainer, result, log);
    if (!writer) {
      log << "run " << result.path << " is already finished (" << result.steps_done << " steps)\n";
      return result;
    }
    const auto& snapshot_steps = config.train.snapshot_steps;
    const auto wants_snapshot = [&](int64_t step) {
      return std::find(snapshot_steps.begin(), snapshot_steps.end(), step) != snapshot_steps.end();
    };
    if (wants_snapshot(result.first_step)) writer->snapshot(result.first_step, host_weights(trainer));

    const bool bar = progress_bar_wanted(config.run.progress);
    ProgressDisplay progress(bar ? std::cerr : log, bar, config.run.log_every, result.first_step,
                             config.train.steps, "step");
    const int64_t every = config.train.checkpoint_every;
    // Ends a resumable session: a checkpoint of the last step (unless it has one), status failed.
    const auto stop = [&](const std::string& why) {
      progress.finish();
      const int64_t step = trainer.steps_done();
      if (step > result.first_step && (every == 0 || step % every != 0)) writer->checkpoint(trainer.export_state());
      writer->fail(why + " after step " + std::to_string(step) + "; continue with samebits train … --resume");
      log << why << " after step " << step << "; checkpoint written, continue with --resume\n";
      result.steps_done = step;
    };
    while (!trainer.finished()) {
      if (g_signal != 0) {
        stop(std::string("interrupted by ") + (g_signal == SIGINT ? "SIGINT" : "SIGTERM"));
        result.interrupted = true;
        return result;
      }
      if (options.stop_after > 0 && trainer.steps_done() >= options.stop_after) {
        stop("stopped (--stop-after " + std::to_string(options.stop_after) + ")");
        result.stopped = true;
        return result;
      }
      const StepResult r = trainer.step();
      writer->record(r);
      result.seconds += r.seconds;
      const int64_t step = trainer.steps_done();
      progress.update(step, r.stats.tokens, r.seconds, r.stats.loss, r.stats.val_loss);
      if (wants_snapshot(step)) writer->snapshot(step, host_weights(trainer));
      if (step < config.train.steps) {
        if (every > 0 && step % every == 0) writer->checkpoint(trainer.export_state());
        else if (writer->pending_bytes() > kCommitBytes) writer->commit();
      }
    }
    progress.finish();
    writer->finish(trainer.export_state());
    result.steps_done = trainer.steps_done();
    return result;
  } catch (const Error& e) {
    std::string message = e.what();
    if (writer) {
      try {
        writer->fail(message);
      } catch (const Error& again) {
        message += "; the run file could not be marked failed either: " + std::string(again.what());
      }
    }
    throw Error(message);
  }
}

}  // namespace sb::cli
