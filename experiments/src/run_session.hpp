// One `samebits train` session of this process, on one process or every rank of an MPI job:
// resume (or open) the run file, steps, checkpoints, a stop at a step boundary, the finish. Rank 0
// writes through its SessionWriter, the other ranks through a null one. Determinism: the session
// records what the trainer computes and decides nothing numeric; a resume imports the newest good
// checkpoint, so every recorded bit equals the uninterrupted run's (the trainer's contract).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "samebits/cli/stop_signals.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/core/tracing_backend.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/train/run_header.hpp"
#include "session_writer.hpp"

namespace sb::cli {

// A request to end the session at the next step boundary, in rising priority: every rank takes
// the highest any rank has (a signal is named over --stop-after, SIGINT over SIGTERM).
enum class StopRequest : uint8_t { none, stop_after, sigterm, sigint };

class RunSession {
 public:
  // Builds the rank's backend (wrapped in a TracingBackend for --trace-steps), communicator and
  // trainer, and installs the stop signals (a rank of a world: with a watchdog that marks the run
  // file when a signal finds this thread blocked in a collective, stop_signals.hpp).
  RunSession(const Config& config, const TrainRunOptions& options, std::ostream& log);

  // Opens the run file (rank 0) and agrees with every rank on the first step, importing its
  // checkpoint (collective); false when the run is already finished (nothing to do).
  bool resume();
  bool trainer_finished() const { return trainer_.finished(); }
  // The stop request every rank agrees on before the next step (collective). The step's time,
  // which sets the stop watchdog's grace, runs from here to the end of checkpoint().
  StopRequest agree_stop();
  // One step, recorded (and its op streams gathered when traced); the steps done after it.
  int64_t step();
  // After a step that is not the last: its checkpoint when due (else a commit of many pending
  // rows), then its snapshot when train.snapshot_steps names it.
  void checkpoint();
  // Ends a resumable session: a checkpoint of the last step (unless it has one), status failed.
  TrainRunResult stop(StopRequest request);
  // The final state and the last commit: status finished.
  TrainRunResult finish();
  // The run marked failed with `message` (when its file is open): the message to throw, with the
  // marking's own failure added.
  std::string fail(std::string message);
  const TrainRunResult& result() const { return result_; }

 private:
  template <class F>
  auto unlocked(F&& f);
  bool mark_stuck(const std::string& why);
  void snapshot(int64_t step, bool served);
  bool wants_snapshot(int64_t step) const;
  bool checkpoint_due(int64_t step) const;
  void save_state();
  void trace_step(int64_t number, std::vector<trace::Row> rows);

  // Destroyed in reverse order: the stop signals first, the trainer before its backend and
  // communicator. An error leaves as an exception, so an MPI communicator ends the job instead of
  // finalising.
  const Config& config_;
  const TrainRunOptions& options_;
  const RankSetup setup_;
  const std::unique_ptr<TracingBackend> tracing_;  // --trace-steps: records during the traced steps only
  const std::vector<float> initial_weights_;       // (flat_size) train.init's, else empty
  Trainer trainer_;
  const run::RunHeader header_;
  TrainRunResult result_;
  // The writer is used under writer_mutex_, which this thread holds but around collectives, so the
  // stop watchdog can mark the run file while this thread waits for a lost rank.
  std::mutex writer_mutex_;
  std::unique_ptr<SessionWriter> writer_;
  std::unique_lock<std::mutex> held_;
  StopSignals stop_signals_;
  std::optional<ProgressDisplay> progress_;
  std::vector<io::TracedStep> traced_steps_;  // --trace-steps: the streams so far
  std::chrono::steady_clock::time_point began_;
};

}  // namespace sb::cli
