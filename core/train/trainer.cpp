// The training step (train/trainer.hpp): leaves → exact accumulator → exact all-reduce → one
// rounding → fp16 skip/backoff → exact-norm clip → optimizer. Determinism: every cross-leaf and
// cross-rank sum is integer (rule 4) or ExactSum (rule 5); the leaf order, micro-step split, thread
// count and world size only change the order of integer additions.
#include "samebits/core/train/trainer.hpp"
#include "samebits/core/io/token_files.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/model/pipeline_schedule.hpp"
#include "samebits/core/optim/adaptive_lr.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/core/optim/qk_clip.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/core/train/perturbation.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/data/permutation.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"
#include "samebits/det/fixed_status.hpp"

namespace sb {
namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

}  // namespace

// The tensors' spans and names, for the per-tensor fingerprints where the tensors live.
struct Trainer::Host {
  std::vector<TensorSpan> spans;   // (tensors) layout order
  std::vector<std::string> names;  // (tensors) layout order

  // det::fingerprint of each tensor of flat, computed by the backend.  flat: backend memory.
  std::vector<uint64_t> fingerprints(Backend& be, const float* flat) const {
    std::vector<uint64_t> out(spans.size());
    be.fingerprints(flat, spans, out.data());
    return out;
  }
};

Trainer::Trainer(const Config& config, Backend& backend, Communicator& comm, TrainerOptions options)
    : config_(config), options_(options), be_(backend), comm_(comm) {
  build();
}

Trainer::Trainer(const Config& config, TrainerOptions options)
    : Trainer(config, make_backend(config, 0), make_local_communicator(), options) {}

Trainer::Trainer(const Config& config, std::unique_ptr<Backend> backend, std::unique_ptr<Communicator> comm,
                 TrainerOptions options)
    : own_backend_(std::move(backend)),
      own_comm_(std::move(comm)),
      config_(config),
      options_(options),
      be_(*own_backend_),
      comm_(*own_comm_) {
  build();
}

Trainer::~Trainer() = default;

void Trainer::build() {
  validate(config_);
  SB_CHECK(options_.micro_leaves >= 0, "micro_leaves=", options_.micro_leaves,
           " must be 0 (all of a rank's leaves at once) or a positive number of leaves");
  // run.threads = 0: every hardware thread (also after an earlier Trainer chose fewer).
  omp_set_num_threads(config_.run.threads > 0 ? static_cast<int>(config_.run.threads) : omp_get_num_procs());
  SB_CHECK(be_.numerics() == to_numerics(config_), "the trainer's backend runs ", describe(be_.numerics()),
           " but the config asks for ", describe(to_numerics(config_)), "; build the backend with to_numerics(config)");
  plan_ = make_parallel_plan(config_, comm_, be_);
  slots_ = full_indices(*plan_);
  stats_.emplace(plan_->local_layout(), be_, slots_, plan_->full_layout().size());

  const data::DataConfig data_config = to_data_config(config_);
  train_source_ = options_.train_source;
  if (train_source_ == nullptr) {
    train_owned_ = data::open_source(data_config, data::Split::train, io::isolated_hdf5_decoder());
    train_source_ = train_owned_.get();
  }
  sampler_ =
      std::make_unique<data::Sampler>(*train_source_, config_.model.seq_len, static_cast<int>(config_.data.leaf_size),
                                      static_cast<int>(config_.data.leaves), sample_order(config_));

  model_ = std::make_unique<GPT>(config_.model, static_cast<int>(config_.data.leaf_size), be_, plan_->tensor_group(),
                                 plan_->pipe_group(), plan_->expert_group());
  model_->init(config_.train.seed);
  SB_CHECK(options_.initial_weights == nullptr || !config_.train.init.empty(),
           "TrainerOptions::initial_weights given, but config train.init is empty: the experiment "
           "would not say where its weights came from; set train.init to their file");
  if (!config_.train.init.empty()) load_initial_weights();
  optimizer_ = plan_->make_optimizer(config_, options_.distributed_optimizer);
  acc_ = config_.numerics.leaf_sum == LeafSumMode::native ? be_.make_native_accumulator(model_->flat_size())
                                                          : be_.make_accumulator(model_->flat_size());
  if (config_.train.precision == Precision::fp16) scaler_.emplace(config_.train);
  grad_ = be_.alloc(DType::f32, {static_cast<int64_t>(model_->flat_size())});
  if (config_.train.schedule == Schedule::adaptive) {
    SB_CHECK(options_.statistics,
             "config train.schedule=adaptive sets the lr from the step's "
             "gradient statistics; they are off in this trainer (TrainerOptions::statistics)");
    adaptive_ = std::make_unique<AdaptiveLr>(config_);
  }
  if (config_.optim.qk_clip > 0.0) {
    qk_ = std::make_unique<QkMaxLogits>(be_, config_.model.n_layer, config_.model.n_head);
  }
  if (config_.model.moe_experts > 0) {  // a tensor-parallel group routes alike: its rank 0 counts
    const bool counted = plan_->tensor_group() == nullptr || plan_->tensor_group()->rank() == 0;
    moe_ = std::make_unique<MoeStepStats>(config_.model, be_, options_.statistics, counted);
  }
  host_ = std::make_unique<Host>();
  for (const ParamView& p : model_->params()) {
    host_->spans.push_back({p.offset, p.numel});
    host_->names.push_back(p.name);
  }
}

void Trainer::load_initial_weights() {
  const std::vector<float>* flat = options_.initial_weights;
  SB_CHECK(flat != nullptr, "config train.init='", escape_untrusted(config_.train.init),
           "' names initial weights, "
           "but the trainer was given none: load them with io::load_initial_weights(config) and pass "
           "them as TrainerOptions::initial_weights");
  plan_->take_local(*flat, model_->weights().data_as<float>());  // this rank's part of the full buffer
  options_.initial_weights = nullptr;                            // read during construction only
}

std::optional<LossScaleState> Trainer::loss_scale() const {
  if (!scaler_) return std::nullopt;
  return scaler_->state();
}

std::vector<int> Trainer::leaf_order(uint64_t step) const {
  const Communicator& leaves = plan_->leaf_group();
  const data::LeafRange range = data::leaf_range(static_cast<int>(config_.data.leaves), leaves.size(), leaves.rank());
  std::vector<int> order(static_cast<size_t>(range.count()));
  for (int i = 0; i < range.count(); ++i) {
    const uint64_t j = options_.leaf_order_seed == 0 ? uint64_t(i)
                                                     : data::keyed_permutation(uint64_t(i), uint64_t(range.count()),
                                                                               options_.leaf_order_seed, step);
    order[size_t(i)] = range.begin + static_cast<int>(j);
  }
  return order;
}

void Trainer::accumulate(uint64_t step, float loss_scale, det::ExactSum& loss_sum) {
  const std::vector<int> order = leaf_order(step);
  const int count = static_cast<int>(order.size());
  const int micro = options_.micro_leaves > 0 ? std::min(options_.micro_leaves, count) : count;
  const size_t leaf_tokens =
      static_cast<size_t>(config_.data.leaf_size) * static_cast<size_t>(config_.model.seq_len + 1);
  LeafPass pass;
  pass.loss_scale = loss_scale;
  if (qk_ || moe_) {
    pass.after_forward = [&](size_t) {
      for (int l = model_->blocks().first; l < model_->blocks().end && qk_; ++l)
        qk_->add(l, model_->attention_qkv(l), static_cast<int>(config_.data.leaf_size), config_.model.seq_len,
                 config_.model.n_embd);
      if (moe_) moe_->add_leaf(*model_);
    };
  }
  if (options_.statistics) pass.leaf_squares = stats_->leaf_sums();
  int first = 0;
  trace::Recorder* const tracer = be_.tracer();  // a traced step's rows are keyed by global leaf
  if (tracer != nullptr) pass.before_forward = [&](size_t i) { tracer->set_leaf(order[size_t(first) + i]); };
  for (; first < count; first += micro) {
    const int n = std::min(micro, count - first);
    tokens_.resize(static_cast<size_t>(n) * leaf_tokens);  // (n, leaf_size, seq_len + 1)
    for (int i = 0; i < n; ++i) {
      sampler_->leaf(step, order[size_t(first) + size_t(i)], tokens_.data() + size_t(i) * leaf_tokens);
    }
    std::vector<const int32_t*> leaves(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) leaves[size_t(i)] = tokens_.data() + size_t(i) * leaf_tokens;
    if (model_->pipe() != nullptr) {  // the leaves are the pipeline's micro-batches
      accumulate_pipelined(*model_, leaves, *acc_, loss_sum, pass, config_.parallel.pp_schedule);
    } else {
      accumulate_leaves(*model_, leaves, *acc_, loss_sum, pass);
    }
  }
  if (tracer != nullptr) tracer->set_leaf(-1);
}

uint32_t Trainer::reduce_scalars(det::ExactSum& loss_sum, uint64_t* adds) {
  // The loss and the leaf statistics as ExactSum words, in one int64 SUM.
  const size_t kw = det::ExactSum::kWords;
  std::vector<int64_t> words(kw + (options_.statistics ? stats_->words() : 0));
  loss_sum.to_words(words.data());
  if (options_.statistics) stats_->to_words(words.data() + kw);
  plan_->sum_scalars(words.data(), words.size(), kw, options_.statistics ? kw : 0);
  loss_sum = det::ExactSum::from_words(words.data());
  if (options_.statistics) stats_->from_words(words.data() + kw);

  *adds = acc_->adds();
  uint32_t status = acc_->status();
  plan_->replica_group().allreduce_sum_u64(adds, 1);
  plan_->world().allreduce_or_u32(&status, 1);  // every rank of every group skips or applies alike
  return status;
}

void Trainer::round_gradient(float loss_scale, uint64_t adds, uint32_t status) {
  const float divisor = static_cast<float>(config_.data.leaves) * loss_scale;
  SB_CHECK(divisor > 0.0f && divisor <= std::numeric_limits<float>::max(), "data.leaves=", config_.data.leaves,
           " × loss scale ", loss_scale, " is not a finite fp32 divisor; lower train.loss_scale");
  float* g = grad_.data_as<float>();
  if (config_.numerics.allreduce == AllreduceMode::exact) {
    plan_->reduce_gradient(*acc_, adds, status);
    acc_->round(g, divisor);
    return;
  }
  // allreduce=native, as frameworks do: each rank's partial sum in fp32 (the exact one rounded, or
  // leaf_sum=native's), a float SUM all-reduce in the communicator's order, then the same one
  // division.
  const size_t n = model_->flat_size();
  acc_->round(g, 1.0f);
  plan_->replica_group().allreduce_sum_f32(g, n);
  be_.gradient_mean(g, static_cast<int64_t>(n), divisor);
}

void Trainer::trace_tensors(const char* site, const char* op, const float* flat,
                            const std::vector<std::vector<uint64_t>>& inputs) {
  if (be_.tracer() == nullptr) return;
  const trace::Scope scope(be_, site);
  trace::record_spans(be_, op, flat, host_->spans, host_->names, inputs);
}

std::vector<uint64_t> Trainer::param_fingerprints() { return plan_->fingerprints(model_->weights().data_as<float>()); }

void Trainer::check_replicas() {
  Communicator& dp = plan_->replica_group();  // the replicas of this rank's tensors
  if (dp.size() == 1 || !options_.check_replicas) return;
  uint64_t mine = 0;
  be_.fingerprints(model_->weights().data_as<float>(), {TensorSpan{0, model_->flat_size()}}, &mine);
  std::vector<uint64_t> all(static_cast<size_t>(dp.size()));
  dp.allgather_u64(&mine, 1, all.data());
  for (size_t r = 1; r < all.size(); ++r) {
    SB_CHECK(all[r] == all[0], "after step ", step_, " the weights of rank ", r, " (fingerprint ",
             det::fingerprint_hex(all[r]), ") differ from rank 0's (", det::fingerprint_hex(all[0]),
             "): the replicas diverged; check that every rank runs the same samebits build "
             "and configuration");
  }
}

void Trainer::clip_qk(StepStats& st) {
  std::vector<int32_t> keys = qk_->keys();
  Communicator& world = plan_->world();
  if (world.size() > 1) {  // every rank's maxima (its stage's blocks), merged in rank order (a max: any order)
    std::vector<uint64_t> mine(keys.begin(), keys.end());
    std::vector<uint64_t> all(mine.size() * static_cast<size_t>(world.size()));
    for (uint64_t& k : mine) k = static_cast<uint32_t>(k);
    world.allgather_u64(mine.data(), mine.size(), all.data());
    for (int r = 0; r < world.size(); ++r) {
      std::vector<int32_t> theirs(keys.size());
      for (size_t i = 0; i < keys.size(); ++i)
        theirs[i] = static_cast<int32_t>(static_cast<uint32_t>(all[size_t(r) * keys.size() + i]));
      QkMaxLogits::merge(keys, theirs);
    }
  }
  st.qk_max_logits = QkMaxLogits::values(keys);
  if (st.skipped) return;  // no update this step: nothing to clip (the maxima are still recorded)
  st.qk_clipped = apply_qk_clip(be_, model_->weights().data_as<float>(), model_->params(), config_.model,
                                st.qk_max_logits, config_.optim.qk_clip);
}

void Trainer::begin_step(StepStats& st) {
  const int64_t number = step_ + 1;  // 1-based: the schedule's step
  // [perturb]: after perturb.step steps, before this step's forward (every rank that holds the
  // tensor, its replica; validate() checked the name against the whole model).
  if (perturbation_due(config_.perturb, step_) && find_param(model_->params(), config_.perturb.tensor) != nullptr)
    apply_perturbation(config_.perturb, *model_);
  st.step = number;
  st.lr_factor = lr_factor(config_.train, number);
  st.lr = scheduled_lr(config_.optim.lr, st.lr_factor);
  st.adam_lr = scheduled_lr(adamw_peak_lr(config_.optim), st.lr_factor);
  st.muon_momentum = muon_momentum(config_.optim, number);
  st.loss_scale = scaler_ ? scaler_->scale() : 1.0f;
  st.tokens = config_.data.leaves * model_->leaf_tokens();
  st.tokens_seen = number * st.tokens;
  st.val_loss = kNaNf;
}

void Trainer::skip_update(StepStats& st, StepResult& result) {
  st.skipped = true;
  st.grad_norm = st.clip_scale = kNaNf;
  if (options_.statistics) stats_->finish(nullptr, st.loss_scale, config_.data.leaves, config_.data.leaf_size, st);
  if (options_.fingerprints) result.grad_fingerprints.assign(plan_->full_layout().size(), 0);
}

void Trainer::finish_gradient(StepStats& st, StepResult& result) {
  float* g = grad_.data_as<float>();
  if (be_.tracer() != nullptr) {  // traced: "allreduce gradient", its output only (docs/TRACE.md)
    const trace::Scope site(be_, "allreduce");
    trace::record_spans(be_, "gradient", g, {TensorSpan{0, model_->flat_size()}}, {""});
  }
  trace_tensors("grad_accumulate", "round", g);
  // Fingerprints, statistics and the clip's ‖G‖² of the full tensors, computed where the
  // gradient is (O(tensors) words back), from every rank's part of it.
  const SharedGradient shared = plan_->share_gradient(g, options_.fingerprints, options_.statistics);
  if (options_.fingerprints) result.grad_fingerprints = shared.fingerprints;
  if (options_.statistics) {
    stats_->finish(shared.tensors.data(), shared.squares, st.loss_scale, config_.data.leaves, config_.data.leaf_size,
                   st);
  }
  st.grad_norm = sqrt_rounded(shared.squares);  // clip_grad_norm's norm, from the same sum
  st.clip_scale = clip_factor(st.grad_norm, config_.optim.clip);
  plan_->scale_gradient(g, st.clip_scale);
  if (adaptive_) {  // this step's lr from this step's noise estimates (adaptive_lr.hpp)
    st.lr_factor = st.lr_factor * adaptive_->update(st.grad_sq_est, st.trace_est);
    st.lr = scheduled_lr(config_.optim.lr, st.lr_factor);
    st.adam_lr = scheduled_lr(adamw_peak_lr(config_.optim), st.lr_factor);
  }
}

void Trainer::update(StepStats& st) {
  float* g = grad_.data_as<float>();
  const size_t tensors = model_->params().size();
  StepContext ctx;
  ctx.step = updates_ + 1;
  ctx.lr_factor = st.lr_factor;
  ctx.muon_momentum = st.muon_momentum;
  ctx.compute_stats = options_.statistics;
  std::vector<std::vector<uint64_t>> update_inputs;  // traced: each tensor's (gradient, weights)
  if (be_.tracer() != nullptr) {
    const std::vector<uint64_t> gf = host_->fingerprints(be_, g), wf = param_fingerprints();
    for (size_t t = 0; t < tensors; ++t) update_inputs.push_back({gf[t], wf[slots_[t]]});
  }
  {
    const trace::Scope site(be_, "optimizer");
    optimizer_->step(model_->weights().data_as<float>(), g, ctx);
  }
  for (size_t t = 0; t < update_inputs.size(); ++t) {  // traced: "adamw update wte", "muon update h.0.attn.qkv.w"
    const trace::Scope site(be_, std::string(update_name(config_.optim, model_->params()[t])).c_str());
    trace::record_spans(be_, "update", model_->weights().data_as<float>(), {host_->spans[t]}, {host_->names[t]},
                        {update_inputs[t]});
  }
  ++updates_;
  if (!options_.statistics) return;
  const std::vector<TensorUpdateStats>& up = optimizer_->last_stats();  // the whole model's tensors
  for (size_t t = 0; t < st.tensors.size() && t < up.size(); ++t) {
    st.tensors[t].update_rms = up[t].update_rms;
    st.tensors[t].update_weight_ratio = up[t].update_weight_ratio;
    st.tensors[t].ortho_error = up[t].ortho_error;
  }
}

StepResult Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const CommCounters traffic_before = plan_->traffic();
  const HostTraffic host_before = be_.host_traffic();
  StepResult result;
  StepStats& st = result.stats;
  begin_step(st);

  acc_->clear();
  stats_->clear();
  if (qk_) qk_->clear();
  if (moe_) moe_->clear();
  det::ExactSum loss_sum;
  accumulate(static_cast<uint64_t>(step_), st.loss_scale, loss_sum);
  uint64_t adds = 0;
  const uint32_t status = reduce_scalars(loss_sum, &adds);
  st.loss = mean_loss(loss_sum, st.tokens);
  SB_CHECK(status == 0 || scaler_, "step ", st.step, ": a leaf gradient held", det::fixed_status_names(status),
           " values (loss ", st.loss, "); the run diverged in ", to_string(config_.train.precision),
           " — lower optim.lr / optim.adam_lr, or use train.precision=fp16 with loss scaling");
  if (scaler_ && !scaler_->update(status != 0)) {
    skip_update(st, result);
  } else {
    round_gradient(st.loss_scale, adds, status);
    finish_gradient(st, result);
    update(st);
  }
  if (qk_) clip_qk(st);
  if (moe_) {
    moe_->finish(plan_->world(), config_.data.leaves, st.tokens, st);
    moe_->after_update(*model_, plan_->world(), !st.skipped, st);
  }
  if (!options_.statistics) {
    st.leaf_sq_mean = st.batch_sq = st.grad_sq_est = st.trace_est = st.noise_scale = kNaNf;
  }
  ++step_;

  if (options_.fingerprints) result.param_fingerprints = param_fingerprints();
  check_replicas();
  const int64_t every = config_.train.eval_every;
  if (every > 0 && (step_ % every == 0 || step_ == config_.train.steps)) st.val_loss = evaluate();

  result.comm = plan_->traffic() - traffic_before;
  result.host = be_.host_traffic() - host_before;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace sb
