// The trainer's validation loss and checkpoint state (train/trainer.hpp). Determinism: the
// validation loss is an exact sum (rule 5) over a fixed set, split across ranks by leaf ranges;
// the state is copied bit for bit, so a run resumed from it continues bitwise.
#include <algorithm>
#include <cstring>
#include <string>

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
  SB_CHECK(plan_->expert_group() == nullptr || leaves % group.size() == 0, "config train.eval_leaves=", leaves,
           " is not a multiple of the ", group.size(), " data-parallel ranks: under parallel.ep=", config_.parallel.ep,
           " every rank of an expert-parallel group evaluates the same number of leaves");
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

std::vector<StateArray> Trainer::own_arrays() const {
  std::vector<StateArray> out;
  if (adaptive_) {  // the schedule's two fp64 EMAs, bit for bit in four fp32 slots
    const AdaptiveLrState& a = adaptive_->state();
    StateArray ema{kAdaptiveStateName, std::vector<float>(4)};
    std::memcpy(ema.data.data(), &a.grad_sq, sizeof(double));
    std::memcpy(ema.data.data() + 2, &a.trace, sizeof(double));
    out.push_back(std::move(ema));
  }
  if (moe_ && config_.model.moe_bias_rate > 0.0) out.push_back({kMoeBiasStateName, moe_->bias()});
  return out;
}

void Trainer::check_own_arrays(const std::vector<StateArray>& arrays) const {
  const std::vector<StateArray> mine = own_arrays();
  for (const StateArray& want : mine) {
    const auto has =
        std::find_if(arrays.begin(), arrays.end(), [&](const StateArray& a) { return a.name == want.name; });
    SB_CHECK(has != arrays.end(), "checkpoint lacks the state '", want.name, "' that this run keeps (",
             want.name == kAdaptiveStateName ? "train.schedule=adaptive" : "model.moe_bias_rate > 0",
             "): the checkpoint is from a different configuration");
    SB_CHECK(has->data.size() == want.data.size(), "checkpoint state '", want.name, "' holds ", has->data.size(),
             " values; this run's has ", want.data.size());
  }
  for (const StateArray& a : arrays) {
    const bool kept = std::any_of(mine.begin(), mine.end(), [&](const StateArray& m) { return m.name == a.name; });
    SB_CHECK(kept, "checkpoint holds the state '", a.name, "', but this run keeps none (",
             a.name == kAdaptiveStateName ? "train.schedule=" + std::string(config_name(config_.train.schedule))
                                          : "model.moe_bias_rate=" + std::to_string(config_.model.moe_bias_rate),
             "): the checkpoint is from a different configuration");
  }
}

void Trainer::set_own_arrays(const std::vector<StateArray>& arrays) {
  for (const StateArray& a : arrays) {
    if (a.name == kAdaptiveStateName) {
      AdaptiveLrState ema;
      std::memcpy(&ema.grad_sq, a.data.data(), sizeof(double));
      std::memcpy(&ema.trace, a.data.data() + 2, sizeof(double));
      adaptive_->set_state(ema);
    } else {
      moe_->set_bias(*model_, a.data);
    }
  }
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
  if (comm_.rank() == 0)
    for (StateArray& a : own_arrays()) s.optimizer.push_back(std::move(a));
}

void Trainer::stream_state(const std::function<void(const TrainerState& head, const StateParts& parts)>& write) {
  TrainerState head;
  export_head(head);
  const std::vector<StateArray> own = own_arrays();
  plan_->full_parts(model_->weights().data_as<float>(), [&](const StateParts& full) {
    if (own.empty()) return write(head, full);
    StateParts parts = full;  // and the trainer's own arrays last, as export_state
    for (const StateArray& a : own) parts.names.push_back(a.name), parts.sizes.push_back(a.data.size());
    parts.array = [&](size_t i) {
      return i < full.names.size() ? full.array(i) : own[i - full.names.size()].data.data();
    };
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
  // Rank 0's scalars and the trainer's own arrays to every rank; its weights and optimizer arrays
  // to the plan, which sends each rank its part.
  const bool root = comm_.rank() == 0;
  TrainerState head;  // rank 0's state without its weights, its optimizer arrays the trainer's own
  uint64_t weights = state.weights.size();
  if (root) {
    head.step = state.step;
    head.updates = state.updates;
    head.cursor = state.cursor;
    head.loss_scale = state.loss_scale;
    head.experiment_id = state.experiment_id;
    for (const StateArray& a : state.optimizer)
      if (is_trainer_array(a.name)) head.optimizer.push_back(a);
  }
  if (comm_.size() > 1) {
    broadcast_state(head, 0, comm_);
    comm_.broadcast(&weights, sizeof(weights), 0);
  }
  check_own_arrays(head.optimizer);
  check_state(head, weights);

  // Rank 0's optimizer arrays (without the trainer's) and weights; the other ranks pass none.
  const std::vector<StateArray> no_arrays;
  const std::vector<float> no_weights;
  std::vector<StateArray> optimizer_arrays;  // a copy only when the trainer's must be left out
  const std::vector<StateArray>* arrays = root ? &state.optimizer : &no_arrays;
  if (root && !head.optimizer.empty()) {
    for (const StateArray& a : state.optimizer)
      if (!is_trainer_array(a.name)) optimizer_arrays.push_back(a);
    arrays = &optimizer_arrays;
  }
  plan_->load_state(*arrays);  // each rank's part, checked before it copies
  plan_->take_local(root ? state.weights : no_weights, model_->weights().data_as<float>());
  if (scaler_) scaler_->set_state(head.loss_scale);
  set_own_arrays(head.optimizer);
  step_ = head.step;
  updates_ = head.updates;
}

}  // namespace sb
