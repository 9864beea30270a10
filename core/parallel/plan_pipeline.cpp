// DP × TP × PP (plan_parts.hpp; docs/DISTRIBUTED.md §11). World rank w = tp + TP·(d + DP·p): the
// ranks of stage p run a stage plan (DP × TP, with EP inside DP) over the tensors stage p holds
// (stage_holds), and the P ranks of one (tp, d) are a pipeline that passes activations and their
// gradients bit for bit: a PartitionedPlan whose parts are the stages. A tied wte's gradient is summed exactly (integer
// words) between the first and the last stage before each stage's data-parallel sum, so both round, clip and update the
// same wte: Megatron's embedding group, without its float all-reduce. Nothing here rounds a float.
#include <string>

#include "plan_partitioned.hpp"
#include "plan_parts.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/det/error.hpp"

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

// A pipeline's stages (the ranks of one (tp, d), by stage), then this stage's ranks.
PartitionedPlan::Comms stage_comms(Communicator& world, int pp, int stage) {
  PartitionedPlan::Comms c;
  c.parts = world.split(world.rank() % (world.size() / pp), stage);
  c.part_world = world.split(stage, world.rank());
  return c;
}

class PipelinePlan final : public PartitionedPlan {
 public:
  PipelinePlan(const Config& config, Communicator& world, Backend& backend, int pp, int stage)
      : PartitionedPlan(
            world, backend, gpt_param_layout(config.model), stage_comms(world, pp, stage),
            [&](Communicator& stage_world) { return make_stage_plan(config, stage_world, backend, pp, stage); },
            [&](int s, const std::string& name) { return stage_holds(config.model, pp, s, name); }) {
    const bool first = stage == 0, last = stage == pp - 1;
    if (config.model.tied_head) embedding_ = parts().split(first || last ? 0 : 1, stage);
    tied_ = config.model.tied_head && (first || last);
    link_ = std::make_unique<StageLink>(parts(), stage, pp);
    const std::vector<ParamView>& mine = local_layout();
    if (tied_ && !mine.empty() && mine[0].name == "wte") tied_elements_ = mine[0].numel;
  }

  std::vector<MeshAxis> mesh() const override {
    std::vector<MeshAxis> axes = inner().mesh();
    for (MeshAxis& a : axes)
      if (a.name == "pp") a = {"pp", part_count(), part()};
    return axes;
  }
  Communicator& leaf_group() override { return inner().leaf_group(); }
  Communicator& replica_group() override { return inner().replica_group(); }
  PipeGroup* pipe_group() override { return link_.get(); }
  ExpertGroup* expert_group() override { return inner().expert_group(); }

  // The tied wte's sums first joined across the embedding group. The wire's totals are the exact
  // add counts: the first and last stage of a pipeline run the same leaves (acc.adds() each), and
  // after the pair's sum every rank of those stages holds twice its adds.
  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    if (tied_) {
      exact_allreduce_prefix(acc, *embedding_, tied_elements_, 2 * acc.adds(), status);
      adds *= 2;
    }
    inner().reduce_gradient(acc, adds, status);
  }
  CommCounters traffic() override { return traffic_with({embedding_.get()}); }

 private:
  std::unique_ptr<Communicator> embedding_;  // tied head: the pipeline's first and last stage (or its middle ones)
  bool tied_ = false;                        // this stage holds a tied wte that the other end holds too
  size_t tied_elements_ = 0;                 // its local numel (the accumulator's first elements)
  std::unique_ptr<StageLink> link_;
};

}  // namespace

std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, Communicator& world, Backend& backend) {
  SB_CHECK(backend.device() == Device::cpu, "config parallel.pp=", config.parallel.pp,
           " runs on CPU ranks (run.backend=cpu); pipeline stages over CUDA ranks are not built yet");
  SB_CHECK(config.numerics.allreduce == AllreduceMode::exact, "config parallel.pp=", config.parallel.pp,
           " with numerics.allreduce=native is not supported (the stages' tied embedding is summed as integer words)");
  const int pp = int(config.parallel.pp), stage = world.rank() / (world.size() / pp);
  return std::make_unique<PipelinePlan>(config, world, backend, pp, stage);
}

}  // namespace sb
