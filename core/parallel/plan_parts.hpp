// The implementations of ParallelPlan beside the data-parallel one (parallel_plan.hpp), made by
// make_parallel_plan. Internal to core/parallel.
#pragma once
#include <memory>
#include <vector>

#include "samebits/core/parallel/parallel_plan.hpp"

namespace sb {

// The plan of one pipeline stage's ranks (world) over the tensors of stage `stage` of `stages`
// (stage_holds; all of them when stages = 1): data-parallel, or DP × TP (parallel_plan.cpp).
std::unique_ptr<ParallelPlan> make_stage_plan(const Config& config, Communicator& world, Backend& backend, int stages,
                                              int stage);
// DP × TP (plan_tensor.cpp): the model's tensors split across consecutive ranks.
std::unique_ptr<ParallelPlan> make_tensor_parallel_plan(const Config& config, Communicator& world, Backend& backend,
                                                        int stages, int stage);
// DP × TP × PP (plan_pipeline.cpp): the stages' plans, joined by pipelines.
std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, Communicator& world, Backend& backend);

}  // namespace sb
