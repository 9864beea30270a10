// Training a configuration into its run file — the loop behind `samebits train`: a new run or a
// resumed one (--resume: the newest good checkpoint, series cut back to it), snapshots,
// checkpoints, the final state, progress on the terminal, and the run marked failed on an error,
// on SIGINT/SIGTERM or at stop_after (the last two after a checkpoint of the last finished step).
// Contract: the run file of a run resumed any number of times has the same content (every dataset
// but /timing bitwise, every attribute but host and time_*) as an uninterrupted run.
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/train/trainer.hpp"

namespace sb::cli {

struct TrainRunOptions {
  bool resume = false;                 // continue the run file at run_path(config) if it exists
  int micro_leaves = 0;                // TrainerOptions::micro_leaves (accumulation split; no effect on the bits)
  int64_t stop_after = 0;              // > 0: end the session after this step as an interruption would
  bool distributed_optimizer = false;  // TrainerOptions::distributed_optimizer (no effect on the bits)
  // Steps (1-based) whose op-hash streams are recorded into RUN.trace.h5 (docs/TRACE.md): the
  // backend is wrapped in a TracingBackend, recording during these steps only (no effect on the bits).
  std::vector<int64_t> trace_steps;
};

struct TrainRunResult {
  int rank = 0;                   // this process's rank (rank 0 writes the run file and reports)
  std::string path;               // the run file
  int64_t first_step = 0;         // steps done when this session began (the resume point)
  int64_t steps_done = 0;         // steps done when it ended
  bool already_finished = false;  // --resume of a finished run: nothing was done
  bool interrupted = false;       // stopped by SIGINT/SIGTERM; resumable
  bool stopped = false;           // stopped by stop_after; resumable
  double seconds = 0;             // wall time of this session's steps
  uint64_t bytes_written = 0;     // bytes this session wrote to the run file and its store (rank 0)
};

// Trains `config` into run_path(config) on the backend run.backend names and the communicator
// of the process's environment (core/train/rank_setup.hpp) (one process, or every rank of `mpirun -np N samebits train
// …`: rank 0 writes the run file and reports; stop requests, checkpoints and the resume point are shared by all ranks).
// Messages and progress go to `log` on rank 0. Throws sb::Error (after marking the run failed in its file when one is
// open) on any failure.
TrainRunResult train_run(const Config& config, const TrainRunOptions& options, std::ostream& log);

// Progress of a long loop: a one-line bar redrawn in place (step/total, loss, tokens/s, ETA) when
// `bar`, else a plain line every `every` steps and at the last.
class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& out, bool bar, int64_t every, int64_t first, int64_t total, const char* what);
  // After step `step` (1-based) of `tokens` tokens that took `seconds`; `loss` and `val_loss`
  // (NaN: not evaluated) are shown.
  void update(int64_t step, int64_t tokens, double seconds, float loss, float val_loss);
  void finish();  // ends the bar's line

 private:
  std::ostream& out_;
  bool bar_;
  int64_t every_, first_, total_;
  const char* what_;
  double seconds_ = 0;
  int64_t tokens_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

// "1:05" or "1:02:03" for a number of seconds; "?" when it is not finite or negative.
std::string duration_text(double seconds);

// True when `progress` asks for a bar here (auto: stderr is a terminal).
bool progress_bar_wanted(Progress progress);

}  // namespace sb::cli
