// What a rank of a `samebits train` session writes: rank 0 the run file (through run::RunWriter,
// its store files on the writer's background thread) and the messages; every other rank nothing,
// through the same calls (NullWriter). No numerics here: the writer records what the trainer gives.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/core/train/run_header.hpp"

namespace sb::cli {

class SessionWriter {
 public:
  virtual ~SessionWriter() = default;

  // Where messages go (a silent stream on the ranks that do not write), and whether the progress
  // is a bar redrawn on stderr.
  virtual std::ostream& log() = 0;
  virtual bool progress_bar(Progress progress) const = 0;

  // Opens the run file at `path`: a new one, or (resume) the existing one at its newest good
  // checkpoint (result's first_step), nothing when it is finished (result's already_finished).
  // Alone, the checkpoint is imported into `trainer` while it is chosen (an import failure passes
  // it over); in a world of ranks the import is collective, so the chosen state is returned in
  // `chosen` for every rank to import together.
  virtual void open(const std::string& path, const run::RunHeader& header, bool resume, Trainer& trainer,
                    std::optional<TrainerState>& chosen, TrainRunResult& result) = 0;

  // A state to fill for the next checkpoint: the buffers of the last one written, once its file is
  // written (one state copy at a time).
  virtual TrainerState spare_state() = 0;
  virtual void record(const StepResult& r) = 0;
  // flat_weights: (flat_size), asked for only when the snapshot is written.
  virtual void snapshot(int64_t step, const std::function<std::vector<float>()>& flat_weights) = 0;
  virtual void checkpoint(TrainerState state, bool kept) = 0;
  // The same from parts fetched while the file is written (Trainer::stream_state); written before
  // the call returns.
  virtual void checkpoint(const TrainerState& head, const StateParts& parts, bool kept) = 0;
  virtual void commit_if_large() = 0;  // pending rows committed when they grow large
  virtual void finish(TrainerState state, bool snapshot) = 0;
  virtual void finish(const TrainerState& head, const StateParts& parts, bool snapshot) = 0;
  // The run marked failed with `message` (when its file is open); an error is thrown.
  virtual void fail(const std::string& message) = 0;
  // The same from the stop watchdog's thread (the session's lock held): "`why` after step N", N
  // the steps recorded; an error is reported on stderr.
  virtual void mark_stuck(const std::string& why) = 0;
  virtual void write_trace(const std::string& path, const std::string& experiment_id,
                           const std::vector<io::TracedStep>& steps) = 0;
  virtual uint64_t bytes_written() const = 0;
};

// Rank 0's writer (the run file opened by open(), messages to `log`), or every other rank's
// NullWriter.
std::unique_ptr<SessionWriter> make_session_writer(bool writes, std::ostream& log);

// "`why` after step `step`; continue with samebits train … --resume": a resumable run's failure.
std::string resumable_failure(const std::string& why, int64_t step);

}  // namespace sb::cli
