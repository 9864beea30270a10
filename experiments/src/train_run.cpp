// train_run.hpp: the `samebits train` loop over Trainer and RunWriter, on one process or every
// rank of an MPI job (rank 0 writes). Snapshot and state files are written by the writer's
// background thread while the next steps run; the run file is committed when a checkpoint's file
// is complete, when pending rows grow large, and at the end; a resume imports the newest good
// checkpoint, so every recorded bit equals the uninterrupted run's (the trainer's contract),
// whatever the moment the earlier session died.
#include "samebits/cli/train_run.hpp"
#include "samebits/cli/data_provenance.hpp"
#include "samebits/cli/stop_signals.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/untrusted_text.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/core/parallel/broadcast_bytes.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/tracing_backend.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/train/run_header.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

// Pending rows beyond this many bytes are committed before the next checkpoint.
constexpr std::size_t kCommitBytes = std::size_t{64} << 20;

// Runs `f` with the run writer's lock released: what may block on peers (a collective) runs
// unlocked, so the stop watchdog can mark the run file while this thread waits for a lost rank.
template <class F>
auto unlocked(std::unique_lock<std::mutex>& held, F&& f) {
  struct Relock {
    std::unique_lock<std::mutex>& lock;
    ~Relock() { lock.lock(); }
  };
  held.unlock();
  const Relock relock{held};
  return f();
}

std::vector<float> host_weights(Trainer& trainer) {
  std::vector<float> w(trainer.model().flat_size());  // (flat_size)
  trainer.backend().copy_to_host(w.data(), trainer.model().weights().data(), w.size() * sizeof(float));
  return w;
}

// Rank 0 opens the run file: a new one, or (--resume) the existing one at its newest good
// checkpoint; nothing when it is finished. Alone, the checkpoint is imported while it is chosen
// (an import failure passes it over); in a world of ranks the import is collective, so the chosen
// state is returned in `chosen` and imported by every rank together.
std::optional<run::RunWriter> open_writer(const std::string& path, const run::RunHeader& header,
                                          const TrainRunOptions& options, Trainer& trainer,
                                          std::optional<TrainerState>& chosen, TrainRunResult& result,
                                          std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (options.resume) log << "resume: no run file at " << path << "; starting a new run\n";
    return run::RunWriter::create(path, header);
  }
  SB_CHECK(options.resume, "run file '", path,
           "' already exists: continue it with --resume, or choose another "
           "--out (samebits never overwrites a run)");
  check_same_data(path, header.data_files);
  const bool alone = trainer.communicator().size() == 1;
  const run::ResumePoint point = run::find_resume_point(path, header, [&](const TrainerState& s) {
    if (alone) trainer.import_state(s);
    else chosen = s;
  });
  for (const std::string& note : point.notes) log << "resume: " << escape_untrusted(note) << "\n";
  if (point.finished) {  // a kill right after the last commit may have left the rolling states
    run::remove_unindexed_files(path, run::RunReader::open(path).store_entries());
    result.already_finished = true;
    result.first_step = result.steps_done = point.step;
    return std::nullopt;
  }
  if (point.source.empty()) chosen.reset();
  const std::string note = point.source.empty() ? "no usable checkpoint; restarted from the initialisation"
                                                : "from checkpoint " + point.source;
  log << "resume: " << path << " at step " << point.step << " (" << note << ")\n";
  result.first_step = point.step;
  return run::RunWriter::resume(path, header, point.step, note);
}

// Step `step`'s stream on every rank, to rank 0 (the leaves' rows of all ranks, the others rank
// 0's, in one process's order); collective. Other ranks get an empty stream.
std::vector<trace::Row> gather_stream(Communicator& comm, std::vector<trace::Row> mine) {
  if (comm.size() == 1) return trace::canonical_order(std::move(mine));
  std::vector<trace::Row> all;
  for (int r = 0; r < comm.size(); ++r) {
    std::vector<std::byte> bytes = r == comm.rank() ? trace::pack(mine) : std::vector<std::byte>{};
    broadcast_bytes(bytes, r, comm);
    for (trace::Row& row : trace::unpack(bytes))
      if (r == 0 || row.leaf >= 0) all.push_back(std::move(row));
  }
  return comm.rank() == 0 ? trace::canonical_order(std::move(all)) : std::vector<trace::Row>{};
}

}  // namespace

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else std::snprintf(text, sizeof text, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return text;
}

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
    std::snprintf(line, sizeof line, "\r%s %lld/%lld [%s] loss %.4f%s  %.0f tok/s  ETA %s ", what_, (long long)step,
                  (long long)total_, bar.c_str(), double(loss), val, rate, duration_text(eta).c_str());
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
  // Destroyed in reverse order: the trainer before its backend and communicator. An error leaves
  // this scope as an exception, so an MPI communicator ends the job instead of finalising.
  // The communicator follows the backend (parallel/launch.hpp); it is destroyed before the backend.
  const RankSetup setup = make_rank_setup(config);
  // --trace-steps: every op through a TracingBackend, recording during the traced steps only.
  std::unique_ptr<TracingBackend> tracing;
  if (!options.trace_steps.empty()) tracing = std::make_unique<TracingBackend>(*setup.backend);
  Backend* const backend = tracing ? static_cast<Backend*>(tracing.get()) : setup.backend.get();
  const std::unique_ptr<Communicator>& comm = setup.comm;
  TrainerOptions trainer_options;
  trainer_options.micro_leaves = options.micro_leaves;
  trainer_options.distributed_optimizer = options.distributed_optimizer;
  const std::vector<float> initial_weights = io::load_initial_weights(config);
  if (!config.train.init.empty()) trainer_options.initial_weights = &initial_weights;
  Trainer trainer(config, *backend, *comm, trainer_options);
  const run::RunHeader header = run_header(config, trainer);
  const bool writes = comm->rank() == 0;  // rank 0 writes the run file and talks
  const bool alone = comm->size() == 1;
  std::ostream silent(nullptr);
  std::ostream& out = writes ? log : silent;
  TrainRunResult result;
  result.path = run_path(config);
  result.rank = comm->rank();

  // The writer is used under `writer_mutex`, which this thread holds but around collectives; a
  // rank of a world has a watchdog that marks the run file when a stop signal finds this thread
  // blocked in one (a lost peer), then ends the process (stop_signals.hpp).
  std::mutex writer_mutex;
  std::optional<run::RunWriter> writer;
  std::unique_lock held(writer_mutex);
  const auto mark_stuck = [&](const std::string& why) {
    const std::unique_lock lock(writer_mutex, std::try_to_lock);
    if (!lock) return false;
    if (!writer) return true;
    try {
      writer->fail(why + " after step " + std::to_string(writer->steps_recorded()) +
                   "; continue with samebits train … --resume");
    } catch (const Error& e) {
      std::fprintf(stderr, "samebits: the run file could not be marked: %s\n", e.what());
    }
    return true;
  };
  StopSignals stop_signals(alone ? nullptr : std::function<bool(const std::string&)>(mark_stuck));
  try {
    std::optional<TrainerState> chosen;
    if (writes) writer = open_writer(result.path, header, options, trainer, chosen, result, out);
    if (writes) writer->write_in_background(true);  // store files written while the steps go on
    if (!alone) {                                   // rank 0's decision, shared; the import is collective
      int64_t decision[2] = {result.already_finished ? 1 : 0, result.first_step};
      unlocked(held, [&] {
        comm->broadcast(decision, sizeof decision, 0);
        if (decision[0] == 0 && decision[1] > 0) trainer.import_state(chosen ? *chosen : TrainerState{});
      });
      result.already_finished = decision[0] != 0;
      result.first_step = result.steps_done = decision[1];
    }
    if (result.already_finished) {
      out << "run " << result.path << " is already finished (" << result.steps_done << " steps)\n";
      return result;
    }
    const auto& snapshot_steps = config.train.snapshot_steps;
    const auto wants_snapshot = [&](int64_t step) {
      return writes && std::find(snapshot_steps.begin(), snapshot_steps.end(), step) != snapshot_steps.end();
    };
    if (wants_snapshot(result.first_step)) writer->snapshot(result.first_step, [&] { return host_weights(trainer); });

    std::vector<io::TracedStep> traced_steps;  // --trace-steps: the streams so far
    const bool bar = writes && progress_bar_wanted(config.run.progress);
    ProgressDisplay progress(bar ? std::cerr : out, bar, config.run.log_every, result.first_step, config.train.steps,
                             "step");
    const int64_t every = config.train.checkpoint_every;
    const int64_t keep = config.train.keep_states;
    // A checkpoint: the state is gathered by every rank, rank 0 writes it (kept for good at the
    // train.keep_states steps).
    const auto checkpoint = [&] {
      TrainerState state;
      if (writes) {  // one state copy at a time, in the buffers of the last one written
        writer->wait_store();
        state = writer->take_spare_state();
      }
      unlocked(held, [&] { trainer.export_state(state); });
      const bool kept = keep > 0 && state.step % keep == 0;
      if (writes) writer->checkpoint(std::move(state), kept);
    };
    const auto checkpoint_due = [&](int64_t step) {
      return (every > 0 && step % every == 0) || (keep > 0 && step % keep == 0);
    };
    // Ends a resumable session: a checkpoint of the last step (unless it has one), status failed.
    const auto stop = [&](const std::string& why) {
      progress.finish();
      const int64_t step = trainer.steps_done();
      if (step > result.first_step && !checkpoint_due(step)) checkpoint();
      if (writes)
        writer->fail(why + " after step " + std::to_string(step) + "; continue with samebits train … --resume");
      out << why << " after step " << step << "; checkpoint written, continue with --resume\n";
      result.steps_done = step;
      if (writes) result.bytes_written = writer->bytes_written();
    };
    while (!trainer.finished()) {
      const auto began = std::chrono::steady_clock::now();
      // Stop requests are agreed by every rank before a step (bits: SIGINT, SIGTERM, --stop-after).
      const int signal = stop_signals.received();
      uint32_t stop_request = (signal == SIGINT ? 1u : 0u) | (signal == SIGTERM ? 2u : 0u) |
                              (options.stop_after > 0 && trainer.steps_done() >= options.stop_after ? 4u : 0u);
      if (!alone) unlocked(held, [&] { comm->allreduce_or_u32(&stop_request, 1); });
      if (stop_request & 3u) {
        stop(std::string("interrupted by ") + (stop_request & 1u ? "SIGINT" : "SIGTERM"));
        result.interrupted = true;
        return result;
      }
      if (stop_request & 4u) {
        stop("stopped (--stop-after " + std::to_string(options.stop_after) + ")");
        result.stopped = true;
        return result;
      }
      const int64_t number = trainer.steps_done() + 1;
      const bool traced = tracing && std::count(options.trace_steps.begin(), options.trace_steps.end(), number) > 0;
      trace::Recorder recorder;
      if (traced) tracing->trace(&recorder);
      const StepResult r = unlocked(held, [&] { return trainer.step(); });
      if (traced) {
        tracing->trace(nullptr);
        traced_steps.push_back(
            {number, unlocked(held, [&] { return gather_stream(*comm, std::move(recorder.rows())); })});
        if (writes && number == *std::max_element(options.trace_steps.begin(), options.trace_steps.end())) {
          io::write_trace_file(io::trace_file_path(result.path), header.experiment_id, traced_steps);
          out << "trace: the op streams of " << traced_steps.size() << " steps in " << io::trace_file_path(result.path)
              << "\n";
        }
      }
      if (writes) writer->record(r);
      result.seconds += r.seconds;
      const int64_t step = trainer.steps_done();
      progress.update(step, r.stats.tokens, r.seconds, r.stats.loss, r.stats.val_loss);
      if (step == config.train.steps) break;
      // The state first: a snapshot of the same step is then served by the state's file.
      if (checkpoint_due(step)) checkpoint();
      else if (writes && writer->pending_bytes() > kCommitBytes) writer->commit();
      if (wants_snapshot(step)) writer->snapshot(step, [&] { return host_weights(trainer); });
      stop_signals.took(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    }
    progress.finish();
    TrainerState final_state;
    if (writes) {
      writer->wait_store();
      final_state = writer->take_spare_state();
    }
    unlocked(held, [&] { trainer.export_state(final_state); });
    if (writes) writer->finish(std::move(final_state), wants_snapshot(config.train.steps));
    result.steps_done = trainer.steps_done();
    if (writes) result.bytes_written = writer->bytes_written();
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
