// run_session.hpp: what may block on peers (a collective, a step, a state's gather) runs with the
// writer's lock released; stop requests are agreed by every rank before a step. No numerics here:
// the trainer's steps and states pass through unchanged.
#include "run_session.hpp"

#include <algorithm>
#include <csignal>
#include <iostream>

#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/parallel/broadcast_bytes.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

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

TrainerOptions trainer_options(const Config& config, const TrainRunOptions& options,
                               const std::vector<float>& initial_weights) {
  TrainerOptions o;
  o.micro_leaves = options.micro_leaves;
  o.distributed_optimizer = options.distributed_optimizer;
  if (!config.train.init.empty()) o.initial_weights = &initial_weights;
  return o;
}

Backend& training_backend(const RankSetup& setup, const std::unique_ptr<TracingBackend>& tracing) {
  if (tracing) return *tracing;
  return *setup.backend;
}

}  // namespace

RunSession::RunSession(const Config& config, const TrainRunOptions& options, std::ostream& log)
    : config_(config),
      options_(options),
      setup_(make_rank_setup(config)),
      tracing_(options.trace_steps.empty() ? nullptr : std::make_unique<TracingBackend>(*setup_.backend)),
      initial_weights_(io::load_initial_weights(config)),
      trainer_(config, training_backend(setup_, tracing_), *setup_.comm,
               trainer_options(config, options, initial_weights_)),
      header_(run_header(config, trainer_)),
      writer_(make_session_writer(setup_.comm->rank() == 0, log)),  // rank 0 writes the run file and talks
      held_(writer_mutex_),
      stop_signals_(setup_.comm->size() == 1 ? nullptr
                                             : std::function<bool(const std::string&)>(
                                                   [this](const std::string& why) { return mark_stuck(why); })) {
  result_.path = run_path(config);
  result_.rank = setup_.comm->rank();
}

// Runs `f` with the writer's lock released (taken again however f ends).
template <class F>
auto RunSession::unlocked(F&& f) {
  struct Relock {
    std::unique_lock<std::mutex>& lock;
    ~Relock() { lock.lock(); }
  };
  held_.unlock();
  const Relock relock{held_};
  return f();
}

// The stop watchdog's thread: false ("busy, try again") while this thread holds the writer.
bool RunSession::mark_stuck(const std::string& why) {
  const std::unique_lock lock(writer_mutex_, std::try_to_lock);
  if (!lock) return false;
  writer_->mark_stuck(why);
  return true;
}

bool RunSession::resume() {
  std::optional<TrainerState> chosen;
  writer_->open(result_.path, header_, options_.resume, trainer_, chosen, result_);
  Communicator& comm = *setup_.comm;
  if (comm.size() > 1) {  // rank 0's decision, shared; the import is collective
    int64_t decision[2] = {result_.already_finished ? 1 : 0, result_.first_step};
    unlocked([&] {
      comm.broadcast(decision, sizeof decision, 0);
      if (decision[0] == 0 && decision[1] > 0) trainer_.import_state(chosen ? *chosen : TrainerState{});
    });
    result_.already_finished = decision[0] != 0;
    result_.first_step = result_.steps_done = decision[1];
  }
  if (result_.already_finished) {
    writer_->log() << "run " << result_.path << " is already finished (" << result_.steps_done << " steps)\n";
    return false;
  }
  if (wants_snapshot(result_.first_step)) snapshot(result_.first_step, result_.first_step > 0);
  const bool bar = writer_->progress_bar(config_.run.progress);
  progress_.emplace(bar ? std::cerr : writer_->log(), bar, config_.run.log_every, result_.first_step,
                    config_.train.steps, "step");
  return true;
}

StopRequest RunSession::agree_stop() {
  began_ = std::chrono::steady_clock::now();
  const int signal = stop_signals_.received();
  const StopRequest mine = signal == SIGINT    ? StopRequest::sigint
                           : signal == SIGTERM ? StopRequest::sigterm
                           : options_.stop_after > 0 && trainer_.steps_done() >= options_.stop_after
                               ? StopRequest::stop_after
                               : StopRequest::none;
  auto agreed = static_cast<uint8_t>(mine);
  if (setup_.comm->size() > 1) unlocked([&] { setup_.comm->allreduce_max_u8(&agreed, 1); });
  return static_cast<StopRequest>(agreed);
}

int64_t RunSession::step() {
  const int64_t number = trainer_.steps_done() + 1;
  const bool traced = tracing_ && std::count(options_.trace_steps.begin(), options_.trace_steps.end(), number) > 0;
  trace::Recorder recorder;
  if (traced) tracing_->trace(&recorder);
  const StepResult r = unlocked([&] { return trainer_.step(); });
  if (traced) trace_step(number, std::move(recorder.rows()));
  writer_->record(r);
  result_.seconds += r.seconds;
  const int64_t step = trainer_.steps_done();
  progress_->update(step, r.stats.tokens, r.seconds, r.stats.loss, r.stats.val_loss);
  return step;
}

void RunSession::trace_step(int64_t number, std::vector<trace::Row> rows) {
  tracing_->trace(nullptr);
  traced_steps_.push_back({number, unlocked([&] { return gather_stream(*setup_.comm, std::move(rows)); })});
  if (number != *std::max_element(options_.trace_steps.begin(), options_.trace_steps.end())) return;
  const std::string path = io::trace_file_path(result_.path);
  writer_->write_trace(path, header_.experiment_id, traced_steps_);
  writer_->log() << "trace: the op streams of " << traced_steps_.size() << " steps in " << path << "\n";
}

void RunSession::checkpoint() {
  const int64_t step = trainer_.steps_done();
  // The state first: a snapshot of the same step is then served by the state's file.
  if (checkpoint_due(step)) save_state();
  else writer_->commit_if_large();
  if (wants_snapshot(step)) snapshot(step, checkpoint_due(step));
  stop_signals_.took(std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count());
}

TrainRunResult RunSession::stop(StopRequest request) {
  const std::string why =
      request == StopRequest::stop_after
          ? "stopped (--stop-after " + std::to_string(options_.stop_after) + ")"
          : std::string("interrupted by ") + (request == StopRequest::sigint ? "SIGINT" : "SIGTERM");
  progress_->finish();
  const int64_t step = trainer_.steps_done();
  if (step > result_.first_step && !checkpoint_due(step)) save_state();
  writer_->fail(resumable_failure(why, step));
  writer_->log() << why << " after step " << step << "; checkpoint written, continue with --resume\n";
  result_.steps_done = step;
  result_.bytes_written = writer_->bytes_written();
  result_.interrupted = request != StopRequest::stop_after;
  result_.stopped = request == StopRequest::stop_after;
  return result_;
}

TrainRunResult RunSession::finish() {
  progress_->finish();
  const bool snapshot = wants_snapshot(config_.train.steps);
  if (trainer_.streams_state()) {
    trainer_.stream_state(
        [&](const TrainerState& head, const StateParts& parts) { writer_->finish(head, parts, snapshot); });
  } else {
    TrainerState final_state = writer_->spare_state();
    unlocked([&] { trainer_.export_state(final_state); });
    writer_->finish(std::move(final_state), snapshot);
  }
  result_.steps_done = trainer_.steps_done();
  result_.bytes_written = writer_->bytes_written();
  return result_;
}

std::string RunSession::fail(std::string message) {
  try {
    writer_->fail(message);
  } catch (const Error& again) {
    message += "; the run file could not be marked failed either: " + std::string(again.what());
  }
  return message;
}

// The model's full weights, gathered on rank 0 from the ranks that hold them (collective), unless
// the store holds a state of the step (`served`: the resume point, or the state just saved), which
// then serves as the snapshot.
void RunSession::snapshot(int64_t step, bool served) {
  std::vector<float> full;  // (flat_size) on rank 0
  if (!served) unlocked([&] { trainer_.plan().full_flat(trainer_.model().weights().data_as<float>(), full); });
  writer_->snapshot(step, [&] {
    SB_CHECK(!full.empty(), "the snapshot of step ", step, " asked for weights that were not gathered");
    return std::move(full);
  });
}

bool RunSession::wants_snapshot(int64_t step) const {
  const auto& steps = config_.train.snapshot_steps;
  return std::find(steps.begin(), steps.end(), step) != steps.end();
}

bool RunSession::checkpoint_due(int64_t step) const {
  const int64_t every = config_.train.checkpoint_every, keep = config_.train.keep_states;
  return (every > 0 && step % every == 0) || (keep > 0 && step % keep == 0);
}

// A checkpoint: every rank takes part in the export, which assembles the full state on rank 0 only
// (one state copy at a time, in the buffers of the last one written); rank 0 writes it (kept for
// good at the train.keep_states steps) while the next steps run. Under pipeline stages rank 0
// writes it as it fetches each array from its stage instead, the writer held throughout (a peer
// lost meanwhile: the stop watchdog ends the rank after a second grace, the run file unmarked).
void RunSession::save_state() {
  const int64_t keep = config_.train.keep_states;
  const bool kept = keep > 0 && trainer_.steps_done() % keep == 0;
  if (trainer_.streams_state()) {
    return trainer_.stream_state(
        [&](const TrainerState& head, const StateParts& parts) { writer_->checkpoint(head, parts, kept); });
  }
  TrainerState state = writer_->spare_state();
  unlocked([&] { trainer_.export_state(state); });
  writer_->checkpoint(std::move(state), kept);
}

}  // namespace sb::cli
