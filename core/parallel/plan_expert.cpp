// Expert parallelism inside data parallelism (plan_parts.hpp; docs/DISTRIBUTED.md §12), Megatron's
// rank order tp-ep-dp-pp: a stage's rank w = tp + TP·d has data-parallel rank d = e + EP·r, so the
// EP consecutive data-parallel ranks of one r (and one tp) form an expert-parallel group, e the
// expert shard a rank holds (ExpertShard), and the ranks of one e (every tp, every r) run the inner
// plan (DP or DP × TP) over the shared tensors and shard e's experts: a PartitionedPlan whose parts
// are the shards. The gradient: the shared tensors (a wire-segment prefix of every shard's flat
// buffer, gpt_tp_layout) summed exactly over the expert-parallel group, then everything over the
// inner plan's data-parallel ranks — the shared tensors over the whole data-parallel group, each
// expert over its expert-data-parallel group, whose accumulators hold every leaf's rows of it (the
// model adds the other ranks' rows through its gradient sink). Nothing here rounds a float.
#include <algorithm>
#include <string>
#include <vector>

#include "plan_partitioned.hpp"
#include "plan_parts.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The expert-parallel group as the model sees it: rows moved bit for bit.
class ExpertLink final : public ExpertGroup {
 public:
  explicit ExpertLink(Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void alltoall(const int64_t* out, size_t n, int64_t* in) override {
    const std::vector<size_t> bytes(size_t(comm_.size()), n * sizeof(int64_t));
    comm_.alltoallv(out, bytes.data(), in, bytes.data());
  }
  void alltoallv(const float* out, const size_t* send, float* in, const size_t* recv) override {
    std::vector<size_t> send_bytes(size_t(comm_.size())), recv_bytes(size_t(comm_.size()));
    for (size_t q = 0; q < send_bytes.size(); ++q) {
      send_bytes[q] = send[q] * sizeof(float);
      recv_bytes[q] = recv[q] * sizeof(float);
    }
    comm_.alltoallv(out, send_bytes.data(), in, recv_bytes.data());
  }

 private:
  Communicator& comm_;
};

// The data-parallel size D of a stage of `world` ranks, checked against parallel.ep: EP divides D,
// and every rank of a group runs as many training and validation leaves as the others (its ranks
// exchange rows in lockstep; Trainer::evaluate checks its leaves again when called without
// train.eval_every).
int checked_dp(const Config& c, const Communicator& world) {
  const int64_t ep = c.parallel.ep, tp = c.parallel.tp, dp = world.size() / tp;
  SB_CHECK(dp % ep == 0, "config parallel.ep=", ep, " does not divide the ", dp,
           " data-parallel ranks: start mpirun -np N with N a multiple of parallel.tp × parallel.ep × parallel.pp "
           "(N = expert-data-parallel groups × ep × tp × pp)");
  SB_CHECK(c.data.leaves % dp == 0, "config data.leaves=", c.data.leaves, " is not a multiple of the ", dp,
           " data-parallel ranks: under parallel.ep=", ep,
           " every rank of an expert-parallel group runs the same number of leaves");
  SB_CHECK(c.train.eval_every == 0 || c.train.eval_leaves % dp == 0, "config train.eval_leaves=", c.train.eval_leaves,
           " is not a multiple of the ", dp, " data-parallel ranks: under parallel.ep=", ep,
           " every rank of an expert-parallel group evaluates the same number of leaves");
  return int(dp);
}

// An expert-parallel group (the ep data-parallel ranks d = e + ep·r of one r and one tp rank, by
// shard e), then this shard's ranks (every tp, every r).
PartitionedPlan::Comms shard_comms(Communicator& world, int tp, int ep) {
  const int t = world.rank() % tp, d = world.rank() / tp;
  PartitionedPlan::Comms c;
  c.parts = world.split(t + tp * (d / ep), d % ep);
  c.part_world = world.split(d % ep, world.rank());
  return c;
}

class ExpertPlan final : public PartitionedPlan {
 public:
  ExpertPlan(const Config& config, Communicator& world, Backend& backend, int stages, int stage, int tp, int dp)
      : PartitionedPlan(
            world, backend, gpt_tp_layout(config.model, 1, 0, stages, stage).full,
            shard_comms(world, tp, int(config.parallel.ep)),
            [&](Communicator& shard_world) {
              const ExpertShard shard{int(config.parallel.ep), world.rank() / tp % int(config.parallel.ep)};
              return make_shard_plan(config, shard_world, backend, stages, stage, shard);
            },
            [&](int e, const std::string& name) {
              return expert_shard_holds(config.model, ExpertShard{int(config.parallel.ep), e}, name);
            }),
        tp_(tp),
        tp_rank_(world.rank() % tp),
        dp_size_(dp),
        dp_(world.split(world.rank() % tp, world.rank() / tp)),
        link_(parts()) {
    shared_ = 0;  // the shared tensors' elements: up to the first routed expert's offset
    for (const ParamView& p : local_layout())
      if (routed_expert_of(p.name) < 0) shared_ = std::max(shared_, p.offset + p.numel);
  }

  std::vector<MeshAxis> mesh() const override {
    return {{"tp", tp_, tp_rank_}, {"ep", part_count(), part()}, {"dp", dp_size_, dp_->rank()}, {"pp", 1, 0}};
  }
  Communicator& leaf_group() override { return *dp_; }
  Communicator& replica_group() override { return inner().replica_group(); }
  ExpertGroup* expert_group() override { return &link_; }

  // Each sum's wire total is the exact add count of its ranks (det/block_wire.hpp's bias): the
  // expert-parallel group's adds for the prefix, after which each of its ranks holds their sum; the
  // inner plan's replicas' of those (adds: theirs before it) for the rest.
  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    uint64_t group = acc.adds();
    parts().allreduce_sum_u64(&group, 1);
    exact_allreduce_prefix(acc, parts(), shared_, group, status);
    parts().allreduce_sum_u64(&adds, 1);
    inner().reduce_gradient(acc, adds, status);
  }
  CommCounters traffic() override { return traffic_with({dp_.get()}); }

 private:
  int tp_, tp_rank_, dp_size_;
  std::unique_ptr<Communicator> dp_;  // the data-parallel group: the ranks of this tp that split the leaves
  ExpertLink link_;
  size_t shared_ = 0;
};

}  // namespace

std::unique_ptr<ParallelPlan> make_expert_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                               int stage) {
  const int dp = checked_dp(config, world);
  return std::make_unique<ExpertPlan>(config, world, backend, stages, stage, int(config.parallel.tp), dp);
}

}  // namespace sb
