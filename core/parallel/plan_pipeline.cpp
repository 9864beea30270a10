// Pipeline stages over another plan (plan_parts.hpp; docs/DISTRIBUTED.md §11). The inner plan's
// replica group — the ranks with this rank's TP coordinate, DP × PP of them, ranked d + DP·p in
// Megatron's order — is cut into each stage's data-parallel group (it splits the leaves) and each
// pipeline's stages (they pass activations and their gradients, bit for bit). Every stage holds
// the whole model's tensors and writes only its own blocks' gradients (the others stay zero), so
// the inner plan's exact sum over the replica group adds the stages' parts as integers: the
// gradient, its statistics and the update are the inner plan's, unchanged.
#include "plan_parts.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// One pipeline's stages: stage s of the pipeline of DP rank d is replica rank d + DP·s.
class StageLink final : public PipeGroup {
 public:
  StageLink(Communicator& replicas, int stage, int stages, int dp, int d)
      : comm_(replicas), stage_(stage), stages_(stages), dp_(dp), d_(d) {}
  int stage() const override { return stage_; }
  int stages() const override { return stages_; }
  void send(const float* x, size_t n, int to) override { comm_.send(x, n * sizeof(float), rank_of(to)); }
  void recv(float* x, size_t n, int from) override { comm_.recv(x, n * sizeof(float), rank_of(from)); }
  void exchange(const float* out, size_t n_out, int to, float* in, size_t n_in, int from) override {
    comm_.exchange(out, n_out * sizeof(float), rank_of(to), in, n_in * sizeof(float), rank_of(from));
  }

 private:
  int rank_of(int stage) const {
    SB_CHECK(stage >= 0 && stage < stages_, "pipeline stage ", stage, " outside [0, ", stages_, ")");
    return d_ + dp_ * stage;
  }
  Communicator& comm_;
  int stage_, stages_, dp_, d_;
};

class PipelinePlan final : public ParallelPlan {
 public:
  PipelinePlan(int pp, std::unique_ptr<ParallelPlan> inner) : inner_(std::move(inner)), pp_(pp) {
    Communicator& replicas = inner_->replica_group();
    dp_ = replicas.size() / pp;
    stage_ = replicas.rank() / dp_;
    d_ = replicas.rank() % dp_;
    leaves_ = replicas.split(stage_, d_);
    link_ = std::make_unique<StageLink>(replicas, stage_, pp, dp_, d_);
  }

  std::vector<MeshAxis> mesh() const override {
    std::vector<MeshAxis> axes = inner_->mesh();
    for (MeshAxis& a : axes) {
      if (a.name == "dp") a = {"dp", dp_, d_};
      if (a.name == "pp") a = {"pp", pp_, stage_};
    }
    return axes;
  }
  Communicator& world() override { return inner_->world(); }
  Communicator& leaf_group() override { return *leaves_; }
  Communicator& replica_group() override { return inner_->replica_group(); }
  TpGroup* tensor_group() override { return inner_->tensor_group(); }
  PipeGroup* pipe_group() override { return link_.get(); }
  const std::vector<ParamView>& local_layout() const override { return inner_->local_layout(); }
  const std::vector<ParamView>& full_layout() const override { return inner_->full_layout(); }
  std::unique_ptr<Optimizer> make_optimizer(const Config& config, bool distributed) override {
    return inner_->make_optimizer(config, distributed);
  }
  void sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) override {
    inner_->sum_scalars(words, n, loss_words, per);  // the loss is the last stage's alone
  }
  void reduce_gradient(GradAccumulator& acc, uint64_t adds, uint32_t status) override {
    inner_->reduce_gradient(acc, adds, status);
  }
  SharedGradient share_gradient(float* grad, bool fingerprints, bool statistics) override {
    return inner_->share_gradient(grad, fingerprints, statistics);
  }
  void scale_gradient(float* grad, float factor) override { inner_->scale_gradient(grad, factor); }
  std::vector<uint64_t> fingerprints(const float* local_flat) override { return inner_->fingerprints(local_flat); }
  void full_flat(const float* local_flat, std::vector<float>& out) override { inner_->full_flat(local_flat, out); }
  void take_local(const std::vector<float>& full, float* local_flat) override { inner_->take_local(full, local_flat); }
  void full_state(std::vector<StateArray>& out) override { inner_->full_state(out); }
  void load_state(const std::vector<StateArray>& full) override { inner_->load_state(full); }
  CommCounters traffic() override {
    CommCounters c = inner_->traffic();
    c += leaves_->counters();
    return c;
  }

 private:
  std::unique_ptr<ParallelPlan> inner_;
  int pp_, dp_ = 1, stage_ = 0, d_ = 0;
  std::unique_ptr<Communicator> leaves_;  // this stage's data-parallel group
  std::unique_ptr<StageLink> link_;
};

}  // namespace

std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, std::unique_ptr<ParallelPlan> inner,
                                                 Backend& backend) {
  SB_CHECK(backend.device() == Device::cpu, "config parallel.pp=", config.parallel.pp,
           " runs on CPU ranks (run.backend=cpu); pipeline stages over CUDA ranks are not built yet");
  return std::make_unique<PipelinePlan>(static_cast<int>(config.parallel.pp), std::move(inner));
}

}  // namespace sb
