// The trainer's validation loss and checkpoint state (train/trainer.hpp). Determinism: the
// validation loss is an exact sum (rule 5) over a fixed set, split across ranks by leaf ranges;
// the state is copied bit for bit, so a run resumed from it continues bitwise.
#include <cstring>

#include "samebits/core/io/token_files.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/parallel/sharded_optimizer.hpp"
#include "samebits/core/parallel/state_broadcast.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"
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
  const data::LeafRange range = data::leaf_range(static_cast<int>(leaves), dp_->size(), dp_->rank());
  std::vector<int32_t> tokens(size_t(leaf_size) * size_t(T + 1));  // (leaf_size, seq_len + 1)
  det::ExactSum sum;
  for (int leaf = range.begin; leaf < range.end; ++leaf) {
    for (int j = 0; j < leaf_size; ++j) {
      validation_->sequence(uint64_t(leaf) * uint64_t(leaf_size) + uint64_t(j),
                            tokens.data() + size_t(j) * size_t(T + 1));
    }
    model_->forward(tokens.data());
    sum.merge(model_->loss_sum());
  }
  int64_t words[det::ExactSum::kWords];
  sum.to_words(words);
  dp_->allreduce_sum_i64(words, det::ExactSum::kWords);  // every TP rank holds the same loss
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

size_t Trainer::tensor_of(const std::string& buffer) const {
  const std::string tensor = buffer.substr(0, buffer.find('/'));
  const std::vector<ParamView>& params = model_->params();
  for (size_t t = 0; t < params.size(); ++t)
    if (params[t].name == tensor) return t;
  SB_FAIL("optimizer state buffer '", buffer, "' names no tensor of the model");
}

std::vector<StateArray> Trainer::local_state(const std::vector<StateArray>& full) const {
  const TpLayout& L = tp_->layout();
  std::vector<StateArray> out;
  for (const StateArray& a : full) {
    const size_t t = tensor_of(a.name);
    SB_CHECK(a.data.size() == L.full[t].numel, "checkpoint optimizer state '", a.name, "' holds ", a.data.size(),
             " values; its tensor ", L.full[t].name, " has ", L.full[t].numel,
             ": the checkpoint is from a different model configuration");
    StateArray shard{a.name, std::vector<float>(L.local[t].numel)};
    if (L.splits[t].sharded) {
      tp_take_shard(L.splits[t], L.rank, a.data.data(), shard.data.data());
    } else {
      shard.data = a.data;
    }
    out.push_back(std::move(shard));
  }
  return out;
}

TrainerState Trainer::export_state() {
  TrainerState s;
  export_state(s);
  return s;
}

void Trainer::export_state(TrainerState& s) {
  s.step = step_;
  s.updates = updates_;
  s.cursor = sampler_->cursor(uint64_t(step_));
  const size_t flat = model_->flat_size();
  if (tp_) {  // the full tensors, whatever the layout (docs/DISTRIBUTED.md §10)
    s.weights = tp_->full_flat(model_->weights().data_as<float>());
  } else {
    s.weights.resize(flat);
    be_.copy_to_host(s.weights.data(), model_->weights().data(), flat * sizeof(float));
  }
  if (sharded_ != nullptr) {  // every owner's buffers, broadcast across the DP group
    s.optimizer = sharded_->gather_state();
  } else {
    const auto& buffers = optimizer_->state();
    s.optimizer.resize(buffers.size());
    for (size_t k = 0; k < buffers.size(); ++k) {
      StateArray& a = s.optimizer[k];
      a.name = buffers[k].name;
      a.data.resize(buffers[k].numel);
      be_.copy_to_host(a.data.data(), buffers[k].data, buffers[k].numel * sizeof(float));
    }
  }
  if (tp_) {  // each buffer's shards gathered across the TP group (the same order on every TP rank)
    for (StateArray& a : s.optimizer) {
      const size_t t = tensor_of(a.name);
      std::vector<float> full(tp_->layout().full[t].numel);
      tp_->gather_shard(t, a.data.data(), full.data());
      a.data = std::move(full);
    }
  }
  if (adaptive_) {  // the two fp64 EMAs, bit for bit in four fp32 slots
    const AdaptiveLrState& a = adaptive_->state();
    StateArray ema{kAdaptiveStateName, std::vector<float>(4)};
    std::memcpy(ema.data.data(), &a.grad_sq, sizeof(double));
    std::memcpy(ema.data.data() + 2, &a.trace, sizeof(double));
    s.optimizer.push_back(std::move(ema));
  }
  s.loss_scale = scaler_ ? scaler_->state() : decltype(s.loss_scale){};
  s.experiment_id = experiment_id(config_);
}

void Trainer::import_state(const TrainerState& state) {
  TrainerState from_root;  // rank 0's state, when there are other ranks
  if (comm_.size() > 1) {
    if (comm_.rank() == 0) from_root = state;
    broadcast_state(from_root, 0, comm_);
  }
  const TrainerState& given = comm_.size() > 1 ? from_root : state;
  TrainerState stripped;  // without the schedule's entry, which the optimizer does not know
  AdaptiveLrState ema;
  const TrainerState& s = take_adaptive_state(given, stripped, ema) ? stripped : given;
  const size_t flat = tp_ ? tp_->full_flat_size() : model_->flat_size();
  SB_CHECK(s.weights.size() == flat, "checkpoint holds ", s.weights.size(), " weights; this model's flat buffer has ",
           flat, ": the checkpoint is from a different model configuration");
  SB_CHECK(s.step >= 0 && s.updates >= 0 && s.updates <= s.step, "checkpoint step ", s.step, " and update count ",
           s.updates, " are inconsistent (need 0 <= updates <= step)");
  // Under TP this rank's shard of every full buffer (each checked against its full tensor first).
  const std::vector<StateArray> shards = tp_ ? local_state(s.optimizer) : std::vector<StateArray>{};
  const std::vector<StateArray>& arrays = tp_ ? shards : s.optimizer;
  const std::vector<StateBuffer> buffers = optimizer_->state();
  if (sharded_ == nullptr) {  // the distributed optimizer checks its part in scatter_state
    SB_CHECK(buffers.size() == arrays.size(), "checkpoint holds ", arrays.size(),
             " optimizer state buffers; this optimizer has ", buffers.size(),
             ": the checkpoint is from a different optimizer configuration");
    for (size_t i = 0; i < buffers.size(); ++i) {
      SB_CHECK(buffers[i].name == arrays[i].name && buffers[i].numel == arrays[i].data.size(),
               "checkpoint optimizer buffer ", i, " is '", arrays[i].name, "' (", arrays[i].data.size(),
               " values); this optimizer expects '", buffers[i].name, "' (", buffers[i].numel, ")");
    }
  }
  const uint64_t data_step = sampler_->step_of(s.cursor);
  SB_CHECK(data_step == uint64_t(s.step), "checkpoint data cursor (epoch ", s.cursor.epoch, ", position ",
           s.cursor.position, ") is the start of step ", data_step, ", but the checkpoint is after step ", s.step,
           "; the file is inconsistent");
  SB_CHECK(scaler_ || s.loss_scale.skipped_steps == 0, "checkpoint records ", s.loss_scale.skipped_steps,
           " skipped fp16 steps, but this run's precision is ", to_string(config_.train.precision));

  if (sharded_ != nullptr) {
    sharded_->scatter_state(arrays);  // checks everything before it copies
  } else {
    for (size_t i = 0; i < buffers.size(); ++i) {
      be_.copy_from_host(buffers[i].data, arrays[i].data.data(), buffers[i].numel * sizeof(float));
    }
  }
  if (tp_) {  // this rank's shard of every full tensor
    std::vector<float> local(model_->flat_size());
    tp_->take_local(s.weights.data(), local.data());
    be_.copy_from_host(model_->weights().data(), local.data(), local.size() * sizeof(float));
  } else {
    be_.copy_from_host(model_->weights().data(), s.weights.data(), flat * sizeof(float));
  }
  if (scaler_) scaler_->set_state(s.loss_scale);
  if (adaptive_) adaptive_->set_state(ema);
  step_ = s.step;
  updates_ = s.updates;
}

}  // namespace sb
