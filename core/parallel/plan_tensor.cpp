// The DP × TP plan (plan_parts.hpp) over TensorParallel (tensor_parallel.hpp): the model's
// shards, the gradient summed exactly across the DP group, the full tensors' fingerprints,
// statistics and checkpoints assembled from the shards. Determinism: shards move bit for bit;
// every sum across ranks is integer words with each replicated value counted once.
#include <cstring>

#include "plan_parts.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/core/parallel/sharded_optimizer.hpp"
#include "samebits/core/parallel/state_broadcast.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"
#include "samebits/core/parallel/tp_optimizer.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// What tensor parallelism does not combine with yet: one error naming the key (exit 2 in the CLI).
// Returns parallel.tp.
int checked_tp(const Config& c) {
  const int64_t tp = c.parallel.tp;
  auto refuse = [tp](const char* what) { SB_FAIL("config parallel.tp=", tp, " with ", what, " is not supported"); };
  if (c.optim.qk_clip > 0.0) refuse("optim.qk_clip > 0 (QK-clip reads whole heads' q and k)");
  if (c.numerics.allreduce != AllreduceMode::exact) refuse("numerics.allreduce=native");
  return static_cast<int>(tp);
}

class TensorParallelPlan final : public ParallelPlan {
 public:
  TensorParallelPlan(const Config& config, Communicator& world, Backend& backend, int stages, int stage,
                     ExpertShard shard)
      : world_(world), backend_(backend), tp_(world, checked_tp(config), config.model, backend, stages, stage, shard) {}

  std::vector<MeshAxis> mesh() const override {
    const int T = tp_.layout().size;
    return {{"tp", T, tp_.layout().rank}, {"dp", world_.size() / T, world_.rank() / T}, {"pp", 1, 0}};
  }
  Communicator& world() override { return world_; }
  Communicator& leaf_group() override { return tp_.dp(); }
  Communicator& replica_group() override { return tp_.dp(); }
  TpGroup* tensor_group() override { return &tp_.group(); }
  const std::vector<ParamView>& local_layout() const override { return tp_.layout().local; }
  const std::vector<ParamView>& full_layout() const override { return tp_.layout().full; }

  // Every optim.tp_mode (tp_optimizer.hpp); the distributed optimizer across the DP group: every
  // TP rank of a DP rank owns the same tensors (balanced by the full tensors' costs) and the
  // owners broadcast their local shards to the same TP rank of the other groups.
  std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) override {
    std::unique_ptr<Optimizer> opt = std::make_unique<TpOptimizer>(config.optim, tp_, backend_, config.train.precision);
    optimizer_ = opt.get();
    if (!distributed || tp_.dp().size() == 1) return opt;
    auto sharded = std::make_unique<ShardedOptimizer>(std::move(opt), local_layout(),
                                                      update_cost(config.optim, full_layout()), backend_, tp_.dp());
    optimizer_ = sharded_ = sharded.get();
    return sharded;
  }

  // Over the world: the loss and the replicated tensors' sums from TP rank 0 of each group.
  void sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) override {
    if (tp_.tp_rank() != 0) std::memset(words, 0, loss_words * sizeof(int64_t));
    if (per > 0) tp_.mask_replicated(words + loss_words, per);
    world_.allreduce_sum_i64(words, n);
  }
  // The gradient stays all-reduced across DP (share() assembles the full tensors' statistics).
  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    exact_allreduce(acc, tp_.dp(), adds, status);
  }
  SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) override {
    return tp_.share(grad, fingerprints, statistics);
  }
  void scale_gradient(float* grad, float factor) override {
    if (factor < 1.0f) backend_.optim_kernels().scale(grad, tp_.layout().local_flat, factor);
  }

  std::vector<uint64_t> fingerprints(const float* local_flat) override { return tp_.fingerprints(local_flat); }
  // The TP group of DP rank 0 gathers each tensor in turn; its TP rank 0 (the world's rank 0) keeps them.
  void full_flat(const float* local_flat, std::vector<float>& out) override {
    out.clear();
    if (tp_.dp().rank() != 0) return;
    const bool root = tp_.tp_rank() == 0;
    if (root) out.assign(tp_.full_flat_size(), 0.0f);
    std::vector<float> one;  // the other TP ranks: the tensor being gathered
    const std::vector<ParamView>& full = full_layout();
    for (size_t t = 0; t < full.size(); ++t) {
      if (!root) one.resize(full[t].numel);
      tp_.gather(t, local_flat, root ? out.data() + full[t].offset : one.data());
    }
  }
  void take_local(const std::vector<float>& full, float* local_flat) override {
    std::vector<float> received;
    tp_.take_local(broadcast_flat(full, received, tp_.full_flat_size(), 0, world_).data(), local_flat);
  }
  // Each buffer's shards gathered across the TP group of DP rank 0 (the same order on every TP
  // rank: the distributed optimizer's gather ends on that group), kept by its TP rank 0.
  void full_state(std::vector<StateArray>& arrays) override {
    if (sharded_ != nullptr) {
      arrays = sharded_->gather_state();
    } else if (tp_.dp().rank() == 0) {
      copy_state(*optimizer_, backend_, arrays);
    } else {
      arrays.clear();
    }
    const bool keep = tp_.tp_rank() == 0;  // the other TP ranks hold one full array at a time
    for (StateArray& a : arrays) {
      const size_t t = tensor_of(a.name);
      std::vector<float> full(full_layout()[t].numel);
      tp_.gather_shard(t, a.data.data(), full.data());
      if (keep) a.data = std::move(full);
    }
    if (!keep) arrays.clear();
  }
  // This rank's shard of every full array, each checked against its full tensor first.
  void load_state(const std::vector<StateArray>& root_arrays) override {
    std::vector<StateArray> received;
    const std::vector<StateArray>& full = broadcast_arrays(root_arrays, received, 0, world_);
    const TpLayout& L = tp_.layout();
    std::vector<StateArray> shards;
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
      shards.push_back(std::move(shard));
    }
    if (sharded_ != nullptr) return sharded_->scatter_state(shards);
    load_state_checked(*optimizer_, backend_, shards);
  }

  CommCounters traffic() override {
    CommCounters c = world_.counters();
    for (const CommCounters* g : {&tp_.tp().counters(), &tp_.dp().counters()}) c += *g;
    return c;
  }

 private:
  // The tensor of a state buffer "<tensor>/<kind>".
  size_t tensor_of(const std::string& buffer) const {
    const std::string tensor = buffer.substr(0, buffer.find('/'));
    const std::vector<ParamView>& params = full_layout();
    for (size_t t = 0; t < params.size(); ++t)
      if (params[t].name == tensor) return t;
    SB_FAIL("optimizer state buffer '", buffer, "' names no tensor of the model");
  }

  Communicator& world_;
  Backend& backend_;
  TensorParallel tp_;
  Optimizer* optimizer_ = nullptr;
  ShardedOptimizer* sharded_ = nullptr;  // optimizer_ itself under the distributed optimizer
};

}  // namespace

std::unique_ptr<ParallelPlan> make_tensor_parallel_plan(const Config& config, Communicator& world, Backend& backend,
                                                        int stages, int stage, ExpertShard shard) {
  return std::make_unique<TensorParallelPlan>(config, world, backend, stages, stage, shard);
}

}  // namespace sb
