// The implementations of ParallelPlan beside the data-parallel one (parallel_plan.hpp), made by
// make_parallel_plan. Internal to core/parallel.
#pragma once
#include <memory>
#include <vector>

#include "samebits/core/parallel/parallel_plan.hpp"

namespace sb {

// DP × TP (plan_tensor.cpp): the model's tensors split across consecutive ranks.
std::unique_ptr<ParallelPlan> make_tensor_parallel_plan(const Config& config, Communicator& world, Backend& backend);
// Pipeline stages over `inner`'s replica group (plan_pipeline.cpp).
std::unique_ptr<ParallelPlan> make_pipeline_plan(const Config& config, std::unique_ptr<ParallelPlan> inner,
                                                 Backend& backend);

}  // namespace sb
