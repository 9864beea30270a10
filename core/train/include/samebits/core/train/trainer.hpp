// The training loop (docs/CONTRACT.md rules 4, 5, 11; docs/TRAINING.md): per step, this rank's
// contiguous range of the step's leaves, each leaf's gradient added into the fixed-point
// accumulator, an exact int64 all-reduce, one rounding g = fl(fl(Σ_l g_l)/L), fp16 loss scaling,
// exact-norm clipping, the optimizer update; statistics, fingerprints and validation on the way.
// Contract: in deterministic mode every bit of the weights, optimizer state, loss and statistics
// after every step is a function of the Config's experiment fields only — not of the thread count,
// the accumulation split, the order this rank processes its leaves in, or the world size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/optim/loss_scale.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train/moe_stats.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/core/train_state.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/token_source.hpp"

namespace sb {

class ParallelPlan;
class QkMaxLogits;

// How to execute a step: none of these changes a bit of the results (they are not part of the
// experiment, and the tests hold them to that).
struct TrainerOptions {
  // Gradient-accumulation split: leaves read and processed per micro-step (each leaf is still one
  // forward/backward and one exact add). 0: all of this rank's leaves of the step at once.
  int micro_leaves = 0;
  bool statistics = true;      // per-tensor statistics and leaf variance (off for benchmarks)
  bool fingerprints = true;    // per-tensor parameter and gradient fingerprints in StepResult
  bool check_replicas = true;  // world > 1: all-gather the weights' fingerprint every step and
                               // throw when a rank's differs from rank 0's
  // Distributed optimizer (ZeRO-1 style, parallel/sharded_optimizer.hpp): in a world of more than one
  // rank each rank keeps the optimizer state of, and updates, only the tensors it owns, and (with
  // allreduce=exact) receives only their gradient, an exact reduce-scatter; the owners broadcast
  // the new weights. Under parallel.tp / parallel.pp: across the replica group (the ranks holding
  // the same tensors, ParallelPlan::replica_group). Off: every rank updates every tensor.
  bool distributed_optimizer = false;
  // 0: this rank processes its leaves in ascending order; otherwise in the order of a keyed
  // permutation of (seed, step) — a switch that exists to show the order does not matter.
  uint64_t leaf_order_seed = 0;
  // Data sources to use instead of opening the Config's [data] (e.g. a researcher's own corpus);
  // they must outlive the Trainer. Validation falls back to the Config's when unset.
  const data::TokenSource* train_source = nullptr;
  const data::TokenSource* validation_source = nullptr;
  // The initial weights when the config names them (train.init): the flat parameter buffer
  // (flat_size, zero gaps), loaded by the caller (io::load_initial_weights checks the file against
  // train.init_digest). Read during construction only. The trainer reads no file itself.
  const std::vector<float>* initial_weights = nullptr;
};

class Trainer {
 public:
  // Builds the model (initialised from train.seed), optimizer, accumulator, sampler and
  // validation set from `config` on `backend` (its numerics are set to the config's), reducing
  // through `comm`. Sets the OpenMP thread count to run.threads (0: every hardware thread).
  // backend and comm must outlive the Trainer.
  Trainer(const Config& config, Backend& backend, Communicator& comm, TrainerOptions options = {});
  // The same on an owned backend of the config's run.backend (make_backend, device 0) and a
  // one-process communicator.
  explicit Trainer(const Config& config, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One step: the next batch, its update (or an fp16 skip), statistics and, every
  // train.eval_every steps and after the last, the validation loss.
  StepResult step();
  // The validation loss now: the exact mean over the train.eval_leaves leaves of the fixed
  // validation set (ranks split the leaves). Collective: every rank must call it.
  float evaluate();

  int64_t steps_done() const { return step_; }
  int64_t updates_done() const { return updates_; }
  bool finished() const { return step_ >= config_.train.steps; }

  // Checkpoint content (weights and optimizer state copied to the host) and its restoration.
  // import_state checks the shapes, buffer names and that the cursor is this sampler's boundary
  // of state.step; after it, step() continues bitwise as the run that exported it would have.
  // In a world of more than one rank both are collective (every rank calls them): export_state
  // returns the full state on rank 0, the rank that writes it (the others send their tensors and
  // get the step, data cursor and loss scale with no weights or optimizer arrays), and
  // import_state uses rank 0's `state` (the others' is ignored and may be empty), so a
  // checkpoint written at any world size resumes at any other.
  TrainerState export_state();
  // The same into `s`, reusing its buffers where their names and sizes fit (a checkpoint's
  // state returned by the run writer: no fresh pages to fault in and clear for each checkpoint).
  void export_state(TrainerState& s);
  void import_state(const TrainerState& state);
  // Collective, the same state for a writer on rank 0 without a whole copy: `write` gets the
  // scalars (head: no weights or optimizer arrays) and the arrays as parts fetched one at a time
  // (ParallelPlan::full_parts). streams_state(): the run's checkpoints take this way — under
  // pipeline stages, whose rank 0 would otherwise hold the whole model besides its stage.
  void stream_state(const std::function<void(const TrainerState& head, const StateParts& parts)>& write);
  bool streams_state() const { return config_.parallel.pp > 1; }
  // import_state's checks of a state (its weights' count, step, update count, data cursor and loss
  // scale against this run), without a collective: the rank that reads a checkpoint refuses a bad
  // one before the ranks import it, and falls back to an earlier one as a single process does.
  void check_state(const TrainerState& state) const { check_state(state, state.weights.size()); }

  // The last step's batch gradient (flat_size, f32, backend memory, aligned with the layout):
  // unscaled and clipped, what the optimizer was given; zeros before the first step. With the
  // distributed optimizer only this rank's tensors hold theirs; under parallel.tp, this rank's shards.
  const Tensor& gradient() const { return grad_; }

  // Per-tensor fingerprints of the current weights (layout order).
  std::vector<uint64_t> param_fingerprints();

  const Config& config() const { return config_; }
  const TrainerOptions& options() const { return options_; }
  GPT& model() { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }
  const GradAccumulator& accumulator() const { return *acc_; }  // the leaf gradients' exact sums
  Backend& backend() { return be_; }
  Communicator& communicator() { return comm_; }
  ParallelPlan& plan() { return *plan_; }  // the layout of the ranks (parallel/parallel_plan.hpp)
  const data::Sampler& sampler() const { return *sampler_; }
  std::optional<LossScaleState> loss_scale() const;  // fp16 only

 private:
  void check_state(const TrainerState& state, size_t weights) const;
  Trainer(const Config& config, std::unique_ptr<Backend> backend, std::unique_ptr<Communicator> comm,
          TrainerOptions options);
  struct Host;  // the tensors' spans and names (trainer.cpp)

  void build();                 // what both constructors do once the backend and communicator are bound
  void load_initial_weights();  // train.init: options_.initial_weights replace the seeded ones
  // The step's schedule fields (lr, momentum, loss scale, tokens) into st; [perturb] when due.
  void begin_step(StepStats& st);
  void accumulate(uint64_t step, float loss_scale, det::ExactSum& loss_sum);
  // All-reduces the loss and leaf-statistics sums, the add count and the accumulator status
  // (non-zero: a leaf gradient was not finite or left the window — an fp16 overflow).
  uint32_t reduce_scalars(det::ExactSum& loss_sum, uint64_t* adds);
  // grad_ ← the batch gradient, unscaled: exact over the replica group (to the owners only under
  // the distributed optimizer), or native float partials.
  void round_gradient(float loss_scale, uint64_t adds, uint32_t status);
  // The rounded gradient's fingerprints and statistics, the global-norm clip and, with
  // train.schedule=adaptive, this step's learning rate.
  void finish_gradient(StepStats& st, StepResult& result);
  void skip_update(StepStats& st, StepResult& result);  // an fp16 overflow: no update this step
  void update(StepStats& st);                           // the optimizer's step and its statistics
  std::vector<int> leaf_order(uint64_t step) const;
  void check_replicas();  // every rank's weights fingerprint equal to rank 0's
  // optim.qk_clip: the ranks' per-head maxima merged, then (unless the step was skipped) the clip
  // of the updated weights.
  void clip_qk(StepStats& st);
  // A traced step (trace.hpp): one row per tensor of flat (backend memory) at `site`, op "<op> <tensor>".
  void trace_tensors(const char* site, const char* op, const float* flat,
                     const std::vector<std::vector<uint64_t>>& inputs = {});
  void export_head(TrainerState& s) const;  // a state's step, update count, cursor, loss scale and id
  // The arrays the trainer keeps beside the optimizer's, in a state's order after them:
  // train.schedule=adaptive's EMAs (kAdaptiveStateName), model.moe_bias_rate's router biases
  // (kMoeBiasStateName). check_own_arrays throws unless `arrays` are exactly this run's (names,
  // sizes); set_own_arrays takes their values.
  std::vector<StateArray> own_arrays() const;
  void check_own_arrays(const std::vector<StateArray>& arrays) const;
  void set_own_arrays(const std::vector<StateArray>& arrays);

  std::unique_ptr<Backend> own_backend_;
  std::unique_ptr<Communicator> own_comm_;
  Config config_;
  TrainerOptions options_;
  Backend& be_;
  Communicator& comm_;
  std::unique_ptr<ParallelPlan> plan_;  // the ranks' layout: groups, splits, exact sums
  std::unique_ptr<data::TokenSource> train_owned_, validation_owned_;
  const data::TokenSource* train_source_ = nullptr;
  const data::TokenSource* validation_source_ = nullptr;
  std::unique_ptr<data::Sampler> sampler_;
  std::unique_ptr<data::ValidationSet> validation_;
  std::unique_ptr<GPT> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradAccumulator> acc_;
  std::optional<DynamicLossScale> scaler_;
  std::vector<size_t> slots_;                // (local tensors) each one's index in the whole model
  std::optional<GradientStatistics> stats_;  // over the plan's local layout
  Tensor grad_;                              // (flat_size) f32 on the backend: the step's batch gradient
  std::unique_ptr<MoeStepStats> moe_;        // model.moe_experts > 0: the step's routing statistics
  std::unique_ptr<QkMaxLogits> qk_;          // optim.qk_clip > 0: the step's per-head max logits
  std::unique_ptr<AdaptiveLr> adaptive_;     // train.schedule = adaptive: the noise EMAs
  std::unique_ptr<Host> host_;
  std::vector<int32_t> tokens_;  // (micro_leaves, leaf_size, seq_len + 1) host
  int64_t step_ = 0;
  int64_t updates_ = 0;
};

}  // namespace sb
