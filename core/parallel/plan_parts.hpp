// The implementations of ParallelPlan beside the data-parallel one (parallel_plan.hpp), made by
// make_parallel_plan. Internal to core/parallel.
#pragma once
#include <memory>
#include <vector>

#include "samebits/core/parallel/parallel_plan.hpp"

namespace sb {

// The plan of one pipeline stage's ranks (world) over the tensors of stage `stage` of `stages`
// (stage_holds; all of them when stages = 1): data-parallel, DP × TP, either with expert
// parallelism inside DP (parallel_plan.cpp).
std::unique_ptr<ParallelPlan> make_stage_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                              int stage);
// The same of the tensors expert shard `shard` holds (all of them: ExpertShard{}), without EP.
std::unique_ptr<ParallelPlan> make_shard_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                              int stage, ExpertShard shard);
// DP × TP (plan_tensor.cpp): the model's tensors split across consecutive ranks.
std::unique_ptr<ParallelPlan> make_tensor_parallel_plan(const Config& config, Communicator& world, Backend& backend,
                                                        int stages, int stage, ExpertShard shard);
// EP inside DP (× TP) (plan_expert.cpp): each expert-parallel group's ranks hold their shard's
// experts, the shared tensors summed across the whole data-parallel group.
std::unique_ptr<ParallelPlan> make_expert_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                               int stage);
// DP × TP × PP (plan_pipeline.cpp): the stages' plans, joined by pipelines.
std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, Communicator& world, Backend& backend);

}  // namespace sb
