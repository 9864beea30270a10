// DP × TP × PP (plan_parts.hpp; docs/DISTRIBUTED.md §11). World rank w = tp + TP·(d + DP·p): the
// ranks of stage p run a stage plan (DP × TP) over the tensors stage p holds (stage_holds), and the
// P ranks of one (tp, d) are a pipeline that passes activations and their gradients bit for bit.
// What the run records is of the whole model: each tensor's fingerprints and statistics come from
// the first stage that holds it, moved over the pipeline as bits, and so do its weights and
// optimizer state for a checkpoint, to world rank 0 alone. A tied
// wte's gradient is summed exactly (integer words) between the first and the last stage before
// each stage's data-parallel sum, so both round, clip and update the same wte: Megatron's
// embedding group, without its float all-reduce. Nothing here rounds a float.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "byte_stream.hpp"
#include "plan_parts.hpp"
#include "samebits/core/byte_codec.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "stage_parts.hpp"

namespace sb {
namespace {

// One pipeline's stages: the pipeline communicator ranks them by stage.
class StageLink final : public PipeGroup {
 public:
  StageLink(Communicator& pipeline, int stage, int stages) : comm_(pipeline), stage_(stage), stages_(stages) {}
  int stage() const override { return stage_; }
  int stages() const override { return stages_; }
  void send(const float* x, size_t n, int to) override { comm_.send(x, n * sizeof(float), checked(to)); }
  void recv(float* x, size_t n, int from) override { comm_.recv(x, n * sizeof(float), checked(from)); }
  void exchange(const float* out, size_t n_out, int to, float* in, size_t n_in, int from) override {
    comm_.exchange(out, n_out * sizeof(float), checked(to), in, n_in * sizeof(float), checked(from));
  }

 private:
  int checked(int stage) const {
    SB_CHECK(stage >= 0 && stage < stages_, "pipeline stage ", stage, " outside [0, ", stages_, ")");
    return stage;
  }
  Communicator& comm_;
  int stage_, stages_;
};

// Per tensor of the whole model, `per` words from the stage that counts it (the others add zeros):
// every rank of the pipeline gets every tensor's. local: (stage tensors, per).
std::vector<uint64_t> from_stages(Communicator& pipeline, const std::vector<uint64_t>& local, size_t per,
                                  const std::vector<size_t>& slot, const std::vector<bool>& counted, size_t tensors) {
  std::vector<uint64_t> full(tensors * per, 0);
  for (size_t i = 0; i < slot.size(); ++i)
    if (counted[i]) std::copy_n(local.begin() + ptrdiff_t(i * per), per, full.begin() + ptrdiff_t(slot[i] * per));
  pipeline.allreduce_sum_u64(full.data(), full.size());
  return full;
}

uint64_t pair_bits(float a, float b) { return uint64_t{det::bits_of(a)} << 32 | det::bits_of(b); }
float high_float(uint64_t w) { return det::float_of_bits(static_cast<uint32_t>(w >> 32)); }
float low_float(uint64_t w) { return det::float_of_bits(static_cast<uint32_t>(w)); }

// The stage's optimizer, whose update statistics are the whole model's (from the stages).
class StageOptimizer final : public Optimizer {
 public:
  StageOptimizer(std::unique_ptr<Optimizer> inner, Communicator& pipeline, const std::vector<size_t>& slot,
                 const std::vector<bool>& counted, size_t tensors)
      : inner_(std::move(inner)), pipeline_(pipeline), slot_(slot), counted_(counted), tensors_(tensors) {}
  void step(float* weights, const float* grads, const StepContext& ctx) override {
    inner_->step(weights, grads, ctx);
    if (!ctx.compute_stats) return;
    const std::vector<TensorUpdateStats>& mine = inner_->last_stats();
    std::vector<uint64_t> local(2 * slot_.size());
    for (size_t i = 0; i < slot_.size() && i < mine.size(); ++i) {
      local[2 * i] = pair_bits(mine[i].update_rms, mine[i].update_weight_ratio);
      local[2 * i + 1] = pair_bits(mine[i].ortho_error, 0.0f);
    }
    const std::vector<uint64_t> full = from_stages(pipeline_, local, 2, slot_, counted_, tensors_);
    stats_.resize(tensors_);
    for (size_t t = 0; t < tensors_; ++t)
      stats_[t] = {high_float(full[2 * t]), low_float(full[2 * t]), high_float(full[2 * t + 1])};
  }
  std::vector<StateBuffer> state() override { return inner_->state(); }
  size_t state_bytes() const override { return inner_->state_bytes(); }
  const std::vector<TensorUpdateStats>& last_stats() const override { return stats_; }
  void set_owned(const std::vector<bool>& owned) override { inner_->set_owned(owned); }
  std::vector<double> update_cost() const override { return inner_->update_cost(); }

 private:
  std::unique_ptr<Optimizer> inner_;
  Communicator& pipeline_;
  const std::vector<size_t>& slot_;
  const std::vector<bool>& counted_;
  size_t tensors_;
  std::vector<TensorUpdateStats> stats_;  // (the model's tensors)
};

class PipelinePlan final : public ParallelPlan {
 public:
  PipelinePlan(const Config& config, Communicator& world, Backend& backend)
      : world_(world), backend_(backend), full_(gpt_param_layout(config.model)), pp_(int(config.parallel.pp)) {
    const int per_stage = world.size() / pp_;  // DP × TP ranks
    stage_ = world.rank() / per_stage;
    stage_world_ = world.split(stage_, world.rank());
    pipeline_ = world.split(world.rank() % per_stage, stage_);
    const bool first = stage_ == 0, last = stage_ == pp_ - 1;
    if (config.model.tied_head) embedding_ = pipeline_->split(first || last ? 0 : 1, stage_);
    tied_ = config.model.tied_head && (first || last);
    inner_ = make_stage_plan(config, *stage_world_, backend, pp_, stage_);
    link_ = std::make_unique<StageLink>(*pipeline_, stage_, pp_);
    const std::vector<ParamView>& mine = inner_->local_layout();
    for (const ParamView& p : mine) {
      slot_.push_back(size_t(find_param(full_, p.name) - full_.data()));
      counted_.push_back(!(last && !first && p.name == "wte"));  // the head's copy: the first stage's counts
      if (p.name == "wte" && tied_) tied_elements_ = p.numel;
    }
    for (const ParamView& p : full_) {
      int s = 0;
      while (!stage_holds(config.model, pp_, s, p.name)) ++s;
      owner_.push_back(s);
    }
    holds_.resize(size_t(pp_));
    for (int s = 0; s < pp_; ++s)
      for (size_t t = 0; t < full_.size(); ++t)
        if (stage_holds(config.model, pp_, s, full_[t].name)) holds_[size_t(s)].push_back(t);
  }

  std::vector<MeshAxis> mesh() const override {
    std::vector<MeshAxis> axes = inner_->mesh();
    for (MeshAxis& a : axes)
      if (a.name == "pp") a = {"pp", pp_, stage_};
    return axes;
  }
  Communicator& world() override { return world_; }
  Communicator& leaf_group() override { return inner_->leaf_group(); }
  Communicator& replica_group() override { return inner_->replica_group(); }
  TpGroup* tensor_group() override { return inner_->tensor_group(); }
  PipeGroup* pipe_group() override { return link_.get(); }
  const std::vector<ParamView>& local_layout() const override { return inner_->local_layout(); }
  const std::vector<ParamView>& full_layout() const override { return full_; }
  std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) override {
    return std::make_unique<StageOptimizer>(inner_->make_optimizer(config, distributed), *pipeline_, slot_, counted_,
                                            full_.size());
  }

  // words: the loss, then `per` words per tensor of the whole model. The stage's plan sums its
  // tensors' words over the stage (each value once), the pipeline adds the stages' (the loss is
  // the last stage's; a tied wte's leaf sums are split by rows between the first and last stage).
  void sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) override {
    std::vector<int64_t> mine(loss_words + slot_.size() * per);
    std::copy_n(words, loss_words, mine.begin());
    for (size_t i = 0; i < slot_.size(); ++i)
      std::copy_n(words + loss_words + slot_[i] * per, per, mine.begin() + ptrdiff_t(loss_words + i * per));
    inner_->sum_scalars(mine.data(), mine.size(), loss_words, per);
    std::fill(words, words + n, 0);
    std::copy_n(mine.begin(), loss_words, words);
    for (size_t i = 0; i < slot_.size(); ++i)
      std::copy_n(mine.begin() + ptrdiff_t(loss_words + i * per), per, words + loss_words + slot_[i] * per);
    pipeline_->allreduce_sum_i64(words, n);
  }
  // The tied wte's sums first joined across the embedding group. The wire's totals are the exact
  // add counts: the first and last stage of a pipeline run the same leaves (acc.adds() each), and
  // after the pair's sum every rank of those stages holds twice its adds.
  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    if (tied_) {
      exact_allreduce_prefix(acc, *embedding_, tied_elements_, 2 * acc.adds(), status);
      adds *= 2;
    }
    inner_->reduce_gradient(acc, adds, status);
  }
  // The stage plan's sums of its tensors, the head's copy of wte left out (zeroed for the call),
  // then each tensor's from the stage that counts it; Σ g² added over the pipeline.
  SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) override {
    std::vector<float> copy;  // the head's wte gradient, put back after the call
    const ParamView* wte = counted_.empty() || counted_[0] ? nullptr : &local_layout()[0];
    if (wte != nullptr) {
      copy.resize(wte->numel);
      backend_.copy_to_host(copy.data(), grad + wte->offset, wte->numel * sizeof(float));
      backend_.zero(grad + wte->offset, wte->numel * sizeof(float));
    }
    SharedGradient mine = inner_->share_gradient(grad, fingerprints, statistics);
    if (wte != nullptr) backend_.copy_from_host(grad + wte->offset, copy.data(), wte->numel * sizeof(float));
    SharedGradient out;
    if (fingerprints) out.fingerprints = gather(mine.fingerprints, 1);
    if (statistics) {
      std::vector<uint64_t> local(3 * slot_.size());
      for (size_t i = 0; i < slot_.size(); ++i) {
        local[3 * i] = pair_bits(mine.tensors[i].norm, mine.tensors[i].max_abs);
        local[3 * i + 1] = pair_bits(mine.tensors[i].mean, 0.0f);
        local[3 * i + 2] = det::bits_of(mine.tensors[i].sq);
      }
      const std::vector<uint64_t> full = gather(local, 3);
      out.tensors.resize(full_.size());
      for (size_t t = 0; t < full_.size(); ++t) {
        out.tensors[t] = {high_float(full[3 * t]), low_float(full[3 * t]), high_float(full[3 * t + 1]),
                          det::double_of_bits(full[3 * t + 2])};
      }
    }
    int64_t words[det::ExactSum::kWords];
    mine.squares.to_words(words);
    pipeline_->allreduce_sum_i64(words, det::ExactSum::kWords);
    out.squares = det::ExactSum::from_words(words);
    return out;
  }
  void scale_gradient(float* grad, float factor) override { inner_->scale_gradient(grad, factor); }

  std::vector<uint64_t> fingerprints(const float* local_flat) override {
    return gather(inner_->fingerprints(local_flat), 1);
  }
  // The model's flat buffer on world rank 0: each stage plan gathers its full tensors on its first
  // rank (the pipeline of world rank 0), which sends world rank 0 those it owns, in model order.
  void full_flat(const float* local_flat, std::vector<float>& out) override {
    std::vector<float> stage;
    inner_->full_flat(local_flat, stage);
    out.clear();
    if (stage_world_->rank() != 0) return;
    const std::vector<ParamView>& mine = inner_->full_layout();
    if (stage_ == 0) out.assign(layout_flat_size(full_), 0.0f);
    for (size_t t = 0; t < full_.size(); ++t) {
      const size_t bytes = full_[t].numel * sizeof(float);
      if (owner_[t] == stage_) {
        const float* from = stage.data() + mine[local_of(t)].offset;
        if (stage_ == 0) std::copy_n(from, full_[t].numel, out.data() + full_[t].offset);
        else pipeline_->send(from, bytes, 0);
      } else if (stage_ == 0) {
        pipeline_->recv(out.data() + full_[t].offset, bytes, owner_[t]);
      }
    }
  }
  // From world rank 0's full buffer: it sends each stage's first rank (of its pipeline) the
  // tensors the stage holds, in model order, and the stage plan passes them on to its ranks.
  void take_local(const std::vector<float>& full, float* local_flat) override {
    uint64_t count = full.size();  // world rank 0's, checked on every rank
    world_.broadcast(&count, sizeof(count), 0);
    SB_CHECK(count == layout_flat_size(full_), "weights of ", count, " values for a parameter buffer of ",
             layout_flat_size(full_));
    const std::vector<ParamView>& mine = inner_->full_layout();
    std::vector<float> stage;  // (the stage's flat) on the stage's first rank
    if (stage_world_->rank() == 0) {
      stage.assign(layout_flat_size(mine), 0.0f);
      for (int s = 0; s < pp_ && stage_ == 0; ++s)
        for (size_t t : holds_[size_t(s)]) {
          const float* from = full.data() + full_[t].offset;
          if (s == 0) std::copy_n(from, full_[t].numel, stage.data() + mine[local_of(t)].offset);
          else pipeline_->send(from, full_[t].numel * sizeof(float), s);
        }
      if (stage_ != 0)
        for (size_t t : holds_[size_t(stage_)])
          pipeline_->recv(stage.data() + mine[local_of(t)].offset, full_[t].numel * sizeof(float), 0);
    }
    inner_->take_local(stage, local_flat);
  }
  // On world rank 0: each stage's arrays of the tensors it owns, sent by the stage's first rank, in
  // the model's tensor order (the one-process optimizer's: per tensor, its kinds).
  void full_state(std::vector<StateArray>& out) override {
    std::vector<StateArray> mine;
    inner_->full_state(mine);  // on the stage's first rank
    out.clear();
    if (stage_world_->rank() != 0) return;
    if (stage_ != 0) {
      ByteWriter w;
      dist_detail::put_arrays(w, mine, [&](const StateArray& a) { return owner_[tensor_of(a.name)] == stage_; });
      dist_detail::send_bytes(w.bytes(), 0, *pipeline_);
      return;
    }
    std::vector<std::vector<StateArray>> per_tensor(full_.size());
    for (StateArray& a : mine) per_tensor[tensor_of(a.name)].push_back(std::move(a));
    for (int from = 1; from < pp_; ++from) {
      std::vector<std::byte> bytes;
      dist_detail::recv_bytes(bytes, from, *pipeline_);
      ByteReader r(bytes, "the optimizer state of pipeline stage " + std::to_string(from), dist_detail::kBroadcastHint);
      for (StateArray& a : dist_detail::get_arrays(r)) per_tensor[tensor_of(a.name)].push_back(std::move(a));
      r.finish();
    }
    for (std::vector<StateArray>& arrays : per_tensor)
      for (StateArray& a : arrays) out.push_back(std::move(a));
  }
  // Each stage plan gathers its full tensors and arrays on its first rank (of world rank 0's
  // pipeline), which answers world rank 0's fetches of those it owns (stage_parts.hpp).
  void full_parts(const float* local_flat, const std::function<void(const StateParts&)>& use) override {
    std::vector<float> stage;
    std::vector<StateArray> arrays;
    inner_->full_flat(local_flat, stage);
    inner_->full_state(arrays);
    if (stage_world_->rank() != 0) return;
    const std::vector<ParamView>& mine = inner_->full_layout();
    dist_detail::StageArrays held;
    std::vector<size_t> numel;
    for (size_t t = 0; t < full_.size(); ++t) {
      numel.push_back(full_[t].numel);
      held.weights.push_back(owner_[t] == stage_ ? stage.data() + mine[local_of(t)].offset : nullptr);
    }
    for (const StateArray& a : arrays) {
      if (owner_[tensor_of(a.name)] != stage_) continue;  // the last stage's copy of a tied wte
      held.names.push_back(a.name);
      held.sizes.push_back(a.data.size());
      held.data.push_back(a.data.data());
    }
    if (stage_ != 0) return dist_detail::serve_parts(held, numel, *pipeline_);
    dist_detail::fetch_parts(
        held, numel, owner_, [&](const std::string& name) { return tensor_of(name); }, *pipeline_, use);
  }
  // From world rank 0's arrays: it sends each stage's first rank (of its pipeline) the arrays of
  // the tensors the stage holds, and the stage plan passes them on (and checks each).
  void load_state(const std::vector<StateArray>& full) override {
    std::vector<StateArray> mine;  // on the stage's first rank
    if (stage_world_->rank() == 0 && stage_ == 0) {
      for (int s = pp_ - 1; s >= 0; --s) {
        const std::vector<size_t>& held = holds_[size_t(s)];
        std::vector<StateArray> part;
        for (const StateArray& a : full)
          if (std::find(held.begin(), held.end(), tensor_of(a.name)) != held.end()) part.push_back(a);
        if (s == 0) {
          mine = std::move(part);
          continue;
        }
        ByteWriter w;
        dist_detail::put_arrays(w, part);
        dist_detail::send_bytes(w.bytes(), s, *pipeline_);
      }
    } else if (stage_world_->rank() == 0) {
      std::vector<std::byte> bytes;
      dist_detail::recv_bytes(bytes, 0, *pipeline_);
      ByteReader r(bytes, "the optimizer state for pipeline stage " + std::to_string(stage_),
                   dist_detail::kBroadcastHint);
      mine = dist_detail::get_arrays(r);
      r.finish();
    }
    inner_->load_state(mine);
  }

  CommCounters traffic() override {
    CommCounters c = inner_->traffic();
    for (Communicator* g : {&world_, pipeline_.get(), embedding_.get()})
      if (g != nullptr) c += g->counters();
    return c;
  }

 private:
  // Per stage tensor `per` words → per model tensor, from the stages that count them.
  std::vector<uint64_t> gather(const std::vector<uint64_t>& local, size_t per) {
    return from_stages(*pipeline_, local, per, slot_, counted_, full_.size());
  }
  // The index in the stage's tensors of model tensor t (one the stage holds).
  size_t local_of(size_t t) const { return size_t(std::find(slot_.begin(), slot_.end(), t) - slot_.begin()); }
  // The model tensor of a state buffer "<tensor>/<kind>".
  size_t tensor_of(const std::string& buffer) const {
    const ParamView* p = find_param(full_, buffer.substr(0, buffer.find('/')));
    SB_CHECK(p != nullptr, "optimizer state buffer '", buffer, "' names no tensor of the model");
    return size_t(p - full_.data());
  }

  Communicator& world_;
  Backend& backend_;
  std::vector<ParamView> full_;  // gpt_param_layout
  int pp_, stage_ = 0;
  std::unique_ptr<Communicator> stage_world_;  // this stage's DP × TP ranks
  std::unique_ptr<Communicator> pipeline_;     // this (tp, d)'s stages, ranked by stage
  std::unique_ptr<Communicator> embedding_;    // tied head: the pipeline's first and last stage (or its middle ones)
  bool tied_ = false;                          // this stage holds a tied wte that the other end holds too
  size_t tied_elements_ = 0;                   // its local numel (the accumulator's first elements)
  std::unique_ptr<ParallelPlan> inner_;        // over stage_world_
  std::unique_ptr<StageLink> link_;
  std::vector<size_t> slot_;                // (stage tensors) each one's index in full_
  std::vector<bool> counted_;               // (stage tensors) false: the last stage's copy of a tied wte
  std::vector<int> owner_;                  // (model tensors) the first stage that holds each
  std::vector<std::vector<size_t>> holds_;  // [stage] the model tensors it holds, in model order
};

}  // namespace

std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, Communicator& world, Backend& backend) {
  SB_CHECK(backend.device() == Device::cpu, "config parallel.pp=", config.parallel.pp,
           " runs on CPU ranks (run.backend=cpu); pipeline stages over CUDA ranks are not built yet");
  SB_CHECK(config.numerics.allreduce == AllreduceMode::exact, "config parallel.pp=", config.parallel.pp,
           " with numerics.allreduce=native is not supported (the stages' tied embedding is summed as integer words)");
  return std::make_unique<PipelinePlan>(config, world, backend);
}

}  // namespace sb
