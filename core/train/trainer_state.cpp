// The trainer's validation loss and checkpoint state (train/trainer.hpp). Determinism: the
// validation loss is an exact sum (rule 5) over a fixed set, split across ranks by leaf ranges;
// the state is copied bit for bit, so a run resumed from it continues bitwise.
#include <cstring>

#include "samebits/core/io/token_files.hpp"
#include "samebits/core/model/pipeline_schedule.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/core/parallel/state_broadcast.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"

namespace sb {

float Trainer::evaluate() {
  const int64_t leaves = config_.train.eval_leaves;
  const int leaf_size = static_cast<int>(config_.data.leaf_size);
  const int T = config_.model.seq_len;
  SB_CHECK(leaves >= 1, "train.eval_leaves=", leaves, " must be at least 1 to evaluate");
  if (!validation_) {
    if (validation_source_ == nullptr) validation_source_ = options_.validation_source;
    if (validation_source_ == nullptr) {
      validation_owned_ =
          data::open_source(to_data_config(config_), data::Split::validation, io::isolated_hdf5_decoder());
      validation_source_ = validation_owned_.get();
    }
    validation_ = std::make_unique<data::ValidationSet>(*validation_source_, T, uint64_t(leaves) * uint64_t(leaf_size));
  }
  const Communicator& group = plan_->leaf_group();
  const data::LeafRange range = data::leaf_range(static_cast<int>(leaves), group.size(), group.rank());
  std::vector<int32_t> tokens(size_t(leaf_size) * size_t(T + 1));  // (leaf_size, seq_len + 1)
  const size_t tokens_per_leaf = size_t(model_->leaf_tokens()) * size_t(config_.model.n_embd);  // a stage boundary
  det::ExactSum sum;
  for (int leaf = range.begin; leaf < range.end; ++leaf) {
    for (int j = 0; j < leaf_size; ++j) {
      validation_->sequence(uint64_t(leaf) * uint64_t(leaf_size) + uint64_t(j),
                            tokens.data() + size_t(j) * size_t(T + 1));
    }
    model_->use_slot(0);
    if (!model_->first_stage())
      model_->pipe()->recv(model_->stage_input(), tokens_per_leaf, model_->pipe()->stage() - 1);
    model_->forward(tokens.data());
    if (!model_->last_stage())
      model_->pipe()->send(model_->stage_output(), tokens_per_leaf, model_->pipe()->stage() + 1);
    sum.merge(model_->loss_sum());  // the last stage's
  }
  int64_t words[det::ExactSum::kWords];
  sum.to_words(words);
  plan_->sum_scalars(words, det::ExactSum::kWords, det::ExactSum::kWords, 0);  // each rank's loss counted once
  return mean_loss(det::ExactSum::from_words(words), leaves * model_->leaf_tokens());
}

// Whether `state` holds the schedule's EMAs; if so, ema ← them and stripped ← a copy without that
// entry. Throws when the state has the entry and this run does not expect it, or the reverse.
bool Trainer::take_adaptive_state(const TrainerState& state, TrainerState& stripped, AdaptiveLrState& ema) const {
  size_t found = state.optimizer.size();
  for (size_t i = 0; i < state.optimizer.size(); ++i)
    if (state.optimizer[i].name == kAdaptiveStateName) found = i;
  const bool has = found < state.optimizer.size();
  SB_CHECK(has == (adaptive_ != nullptr), "checkpoint ", has ? "holds" : "lacks",
           " the state of train.schedule=adaptive ('", kAdaptiveStateName, "'), but this run's schedule is ",
           config_name(config_.train.schedule), ": the checkpoint is from a different configuration");
  if (!has) return false;
  const StateArray& a = state.optimizer[found];
  SB_CHECK(a.data.size() == 4, "checkpoint state '", kAdaptiveStateName, "' holds ", a.data.size(),
           " values; expected 4 (two fp64 EMAs)");
  std::memcpy(&ema.grad_sq, a.data.data(), sizeof(double));
  std::memcpy(&ema.trace, a.data.data() + 2, sizeof(double));
  stripped = state;
  stripped.optimizer.erase(stripped.optimizer.begin() + static_cast<std::ptrdiff_t>(found));
  return true;
}

TrainerState Trainer::export_state() {
  TrainerState s;
  export_state(s);
  return s;
}

void Trainer::export_state(TrainerState& s) {
  export_head(s);
  // The full tensors and the one-process optimizer's arrays, whatever the layout, on rank 0 alone.
  plan_->full_flat(model_->weights().data_as<float>(), s.weights);
  plan_->full_state(s.optimizer);
  if (adaptive_ && comm_.rank() == 0) s.optimizer.push_back(adaptive_array());
}

void Trainer::stream_state(const std::function<void(const TrainerState& head, const StateParts& parts)>& write) {
  TrainerState head;
  export_head(head);
  const StateArray ema = adaptive_ ? adaptive_array() : StateArray{};
  plan_->full_parts(model_->weights().data_as<float>(), [&](const StateParts& full) {
    if (!adaptive_) return write(head, full);
    StateParts parts = full;  // and the schedule's entry last, as export_state
    parts.names.push_back(ema.name);
    parts.sizes.push_back(ema.data.size());
    parts.array = [&](size_t i) { return i < full.names.size() ? full.array(i) : ema.data.data(); };
    write(head, parts);
  });
}

void Trainer::export_head(TrainerState& s) const {
  s.step = step_;
  s.updates = updates_;
  s.cursor = sampler_->cursor(uint64_t(step_));
  s.loss_scale = scaler_ ? scaler_->state() : decltype(s.loss_scale){};
  s.experiment_id = experiment_id(config_);
}

// The schedule's two fp64 EMAs, bit for bit in four fp32 slots.
StateArray Trainer::adaptive_array() const {
  const AdaptiveLrState& a = adaptive_->state();
  StateArray ema{kAdaptiveStateName, std::vector<float>(4)};
  std::memcpy(ema.data.data(), &a.grad_sq, sizeof(double));
  std::memcpy(ema.data.data() + 2, &a.trace, sizeof(double));
  return ema;
}

void Trainer::check_state(const TrainerState& s, size_t weights) const {
  const size_t flat = layout_flat_size(plan_->full_layout());
  SB_CHECK(weights == flat, "checkpoint holds ", weights, " weights; this model's flat buffer has ", flat,
           ": the checkpoint is from a different model configuration");
  SB_CHECK(s.step >= 0 && s.updates >= 0 && s.updates <= s.step, "checkpoint step ", s.step, " and update count ",
           s.updates, " are inconsistent (need 0 <= updates <= step)");
  const uint64_t data_step = sampler_->step_of(s.cursor);
  SB_CHECK(data_step == uint64_t(s.step), "checkpoint data cursor (epoch ", s.cursor.epoch, ", position ",
           s.cursor.position, ") is the start of step ", data_step, ", but the checkpoint is after step ", s.step,
           "; the file is inconsistent");
  SB_CHECK(scaler_ || s.loss_scale.skipped_steps == 0, "checkpoint records ", s.loss_scale.skipped_steps,
           " skipped fp16 steps, but this run's precision is ", to_string(config_.train.precision));
}

void Trainer::import_state(const TrainerState& state) {
  // Rank 0's scalars (and the schedule's entry) to every rank; its weights and optimizer arrays to
  // the plan, which sends each rank its part.
  const bool root = comm_.rank() == 0;
  TrainerState head;  // rank 0's state without its weights and the optimizer's arrays
  uint64_t weights = state.weights.size();
  if (root) {
    head.step = state.step;
    head.updates = state.updates;
    head.cursor = state.cursor;
    head.loss_scale = state.loss_scale;
    head.experiment_id = state.experiment_id;
    for (const StateArray& a : state.optimizer)
      if (a.name == kAdaptiveStateName) head.optimizer.push_back(a);
  }
  if (comm_.size() > 1) {
    broadcast_state(head, 0, comm_);
    comm_.broadcast(&weights, sizeof(weights), 0);
  }
  TrainerState stripped;  // without the schedule's entry, which the optimizer does not know
  AdaptiveLrState ema;
  const bool has_ema = take_adaptive_state(head, stripped, ema);
  const TrainerState& s = has_ema ? stripped : head;
  check_state(s, weights);

  // Rank 0's arrays (without the schedule's entry) and weights; the other ranks pass none.
  const std::vector<StateArray> no_arrays;
  const std::vector<float> no_weights;
  std::vector<StateArray> stripped_arrays;
  const std::vector<StateArray>* arrays = root ? &state.optimizer : &no_arrays;
  if (root && has_ema) {
    for (const StateArray& a : state.optimizer)
      if (a.name != kAdaptiveStateName) stripped_arrays.push_back(a);
    arrays = &stripped_arrays;
  }
  plan_->load_state(*arrays);  // each rank's part, checked before it copies
  plan_->take_local(root ? state.weights : no_weights, model_->weights().data_as<float>());
  if (scaler_) scaler_->set_state(s.loss_scale);
  if (adaptive_) adaptive_->set_state(ema);
  step_ = s.step;
  updates_ = s.updates;
}

}  // namespace sb
