// make_parallel_plan and the data-parallel plan (parallel_plan.hpp): every rank holds every
// tensor; the gradient is summed exactly across the world (rule 4), or reduce-scattered to the
// tensors' owners under the distributed optimizer (owner_gradient.hpp). Nothing here rounds a
// float: state and weights are copied bit for bit, sums are integer words.
#include "samebits/core/parallel/parallel_plan.hpp"

#include <algorithm>
#include <string>

#include "plan_parts.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/core/parallel/sharded_optimizer.hpp"
#include "samebits/core/parallel/state_broadcast.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"

namespace sb {

std::vector<size_t> full_indices(const ParallelPlan& plan) {
  const std::vector<ParamView>& full = plan.full_layout();
  std::vector<size_t> out;
  for (const ParamView& p : plan.local_layout()) {
    const ParamView* f = find_param(full, p.name);
    SB_CHECK(f != nullptr, "tensor ", p.name, " of this rank is not a tensor of the model");
    out.push_back(size_t(f - full.data()));
  }
  return out;
}

size_t layout_flat_size(const std::vector<ParamView>& layout) {
  size_t n = 0;
  for (const ParamView& p : layout) n = std::max(n, p.offset + (p.numel + kParamAlign - 1) / kParamAlign * kParamAlign);
  return n;
}

void copy_state(Optimizer& opt, Backend& backend, std::vector<StateArray>& out) {
  const std::vector<StateBuffer> buffers = opt.state();
  out.resize(buffers.size());
  for (size_t k = 0; k < buffers.size(); ++k) {
    out[k].name = buffers[k].name;
    out[k].data.resize(buffers[k].numel);
    backend.copy_to_host(out[k].data.data(), buffers[k].data, buffers[k].numel * sizeof(float));
  }
}

void load_state_checked(Optimizer& opt, Backend& backend, const std::vector<StateArray>& arrays) {
  const std::vector<StateBuffer> buffers = opt.state();
  SB_CHECK(buffers.size() == arrays.size(), "checkpoint holds ", arrays.size(),
           " optimizer state buffers; this optimizer has ", buffers.size(),
           ": the checkpoint is from a different optimizer configuration");
  for (size_t i = 0; i < buffers.size(); ++i) {
    SB_CHECK(buffers[i].name == arrays[i].name && buffers[i].numel == arrays[i].data.size(),
             "checkpoint optimizer buffer ", i, " is '", arrays[i].name, "' (", arrays[i].data.size(),
             " values); this optimizer expects '", buffers[i].name, "' (", buffers[i].numel, ")");
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    backend.copy_from_host(buffers[i].data, arrays[i].data.data(), buffers[i].numel * sizeof(float));
}

void ParallelPlan::full_parts(const float* local_flat, const std::function<void(const StateParts&)>& use) {
  std::vector<float> flat;
  std::vector<StateArray> arrays;
  full_flat(local_flat, flat);
  full_state(arrays);
  if (world().rank() != 0) return;
  const std::vector<ParamView>& full = full_layout();
  StateParts parts;
  parts.tensors = full.size();
  for (const StateArray& a : arrays) {
    parts.names.push_back(a.name);
    parts.sizes.push_back(a.data.size());
  }
  parts.weights = [&](size_t t) { return flat.data() + full[t].offset; };
  parts.array = [&](size_t i) { return arrays[i].data.data(); };
  use(parts);
}

namespace {

// Per tensor of `layout` (spans: its spans) the batch sums of grad (flat, backend memory) by the
// backend's tensor sums (made in `sums` on first use).
std::vector<TensorBatchSums> whole_tensor_sums(Backend& backend, std::unique_ptr<TensorSums>& sums,
                                               const std::vector<TensorSpan>& spans,
                                               const std::vector<ParamView>& layout, const float* grad) {
  if (!sums) sums = backend.make_tensor_sums(spans);
  const size_t n = spans.size();
  std::vector<det::ExactSum> sq(n), sum(n);
  std::vector<float> max_abs(n);
  sums->clear();
  sums->add(grad, true);
  sums->read(sq.data(), sum.data(), max_abs.data());
  std::vector<TensorBatchSums> out(n);
  for (size_t t = 0; t < n; ++t) out[t] = batch_sums(sq[t], sum[t], max_abs[t], layout[t].numel);
  return out;
}

class DataParallelPlan final : public ParallelPlan {
 public:
  // layout: the model's tensors (a pipeline stage's: gpt_tp_layout of one rank).
  DataParallelPlan(Communicator& world, Backend& backend, std::vector<ParamView> layout)
      : world_(world), backend_(backend), layout_(std::move(layout)), flat_(layout_flat_size(layout_)) {
    for (const ParamView& p : layout_) {
      spans_.push_back({p.offset, p.numel});
      names_.push_back(p.name);
    }
  }

  std::vector<MeshAxis> mesh() const override {
    return {{"tp", 1, 0}, {"dp", world_.size(), world_.rank()}, {"pp", 1, 0}};
  }
  Communicator& world() override { return world_; }
  Communicator& leaf_group() override { return world_; }
  Communicator& replica_group() override { return world_; }
  const std::vector<ParamView>& local_layout() const override { return layout_; }
  const std::vector<ParamView>& full_layout() const override { return layout_; }

  std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) override {
    std::unique_ptr<Optimizer> opt = sb::make_optimizer(config.optim, layout_, backend_, config.train.precision);
    optimizer_ = opt.get();
    if (!distributed || world_.size() == 1) return opt;
    auto sharded = std::make_unique<ShardedOptimizer>(std::move(opt), layout_, update_cost(config.optim, layout_),
                                                      backend_, world_);
    optimizer_ = sharded_ = sharded.get();
    // With the exact all-reduce each owner receives only its tensors' sums (a reduce-scatter).
    if (config.numerics.allreduce == AllreduceMode::exact) {
      owner_ = std::make_unique<OwnerGradient>(layout_, sharded_->ownership(), backend_, world_);
    }
    return sharded;
  }

  void sum_scalars(int64_t* words, size_t n, size_t, size_t) override { world_.allreduce_sum_i64(words, n); }

  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    if (owner_) {
      exact_reduce_scatter(acc, world_, adds, status, owner_->need());
    } else {
      exact_allreduce(acc, world_, adds, status);
    }
  }

  // The whole gradient is here: the clip's Σ g² by the optimizer kernels (traced "clip
  // sum_of_squares"), the statistics' sums by the backend's tensor sums.
  SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) override {
    if (owner_) return owner_->share(grad, fingerprints, statistics);
    SharedGradient out;
    if (fingerprints) {
      out.fingerprints.resize(spans_.size());
      backend_.fingerprints(grad, spans_, out.fingerprints.data());
    }
    {
      const trace::Scope site(backend_, "clip");
      out.squares = backend_.optim_kernels().sum_of_squares(grad, flat_);
    }
    if (statistics) out.tensors = whole_tensor_sums(backend_, sums_, spans_, layout_, grad);
    return out;
  }

  void scale_gradient(float* grad, float factor) override {
    if (owner_) {
      if (factor < 1.0f) owner_->scale_owned(grad, factor);
      return;
    }
    const trace::Scope site(backend_, "clip");  // traced: "clip scale", then each tensor's row
    if (factor < 1.0f) backend_.optim_kernels().scale(grad, flat_, factor);
    if (backend_.tracer() != nullptr) trace::record_spans(backend_, "scale", grad, spans_, names_);
  }

  std::vector<uint64_t> fingerprints(const float* local_flat) override {
    std::vector<uint64_t> out(spans_.size());
    backend_.fingerprints(local_flat, spans_, out.data());
    return out;
  }
  void full_flat(const float* local_flat, std::vector<float>& out) override {
    out.clear();
    if (world_.rank() != 0) return;
    out.resize(flat_);
    backend_.copy_to_host(out.data(), local_flat, flat_ * sizeof(float));
  }
  void take_local(const std::vector<float>& full, float* local_flat) override {
    std::vector<float> received;
    const std::vector<float>& from = broadcast_flat(full, received, flat_, 0, world_);
    backend_.copy_from_host(local_flat, from.data(), flat_ * sizeof(float));
  }
  void full_state(std::vector<StateArray>& out) override {
    if (sharded_ != nullptr) {
      out = sharded_->gather_state();
    } else if (world_.rank() == 0) {
      copy_state(*optimizer_, backend_, out);
    } else {
      out.clear();
    }
  }
  void load_state(const std::vector<StateArray>& full) override {
    std::vector<StateArray> received;
    const std::vector<StateArray>& arrays = broadcast_arrays(full, received, 0, world_);
    if (sharded_ != nullptr) return sharded_->scatter_state(arrays);  // checks everything before it copies
    load_state_checked(*optimizer_, backend_, arrays);
  }
  CommCounters traffic() override { return world_.counters(); }

 private:
  Communicator& world_;
  Backend& backend_;
  std::vector<ParamView> layout_;
  size_t flat_;
  std::vector<TensorSpan> spans_;
  std::vector<std::string> names_;
  std::unique_ptr<TensorSums> sums_;  // the statistics' per-tensor sums (made on first use)
  Optimizer* optimizer_ = nullptr;
  ShardedOptimizer* sharded_ = nullptr;  // optimizer_ itself under the distributed optimizer
  std::unique_ptr<OwnerGradient> owner_;
};

}  // namespace

std::unique_ptr<ParallelPlan> make_parallel_plan(const Config& config, Communicator& world, Backend& backend) {
  const int64_t tp = config.parallel.tp, pp = config.parallel.pp;
  validate_tp(config.model, tp);
  validate_pp(config.model, pp);
  // (parallel.tp alone: TensorParallel's check names it.)
  SB_CHECK(pp == 1 || world.size() % (tp * pp) == 0, "config ",
           tp > 1 ? "parallel.tp=" + std::to_string(tp) + " × parallel.pp=" + std::to_string(pp) + " = " +
                        std::to_string(tp * pp)
                  : "parallel.pp=" + std::to_string(pp),
           " does not divide the world of ", world.size(),
           " ranks: start mpirun -np N with N a multiple of parallel.tp × parallel.pp (N = data-parallel groups × "
           "tp × pp)");
  if (pp > 1) return make_pipeline_plan(config, world, backend);
  return make_stage_plan(config, world, backend, 1, 0);
}

std::unique_ptr<ParallelPlan> make_stage_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                              int stage) {
  if (config.parallel.ep > 1) return make_expert_plan(config, world, backend, stages, stage);
  return make_shard_plan(config, world, backend, stages, stage, ExpertShard{});
}

std::unique_ptr<ParallelPlan> make_shard_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                              int stage, ExpertShard shard) {
  if (config.parallel.tp > 1) return make_tensor_parallel_plan(config, world, backend, stages, stage, shard);
  return std::make_unique<DataParallelPlan>(world, backend,
                                            gpt_tp_layout(config.model, 1, 0, stages, stage, shard).local);
}

}  // namespace sb
