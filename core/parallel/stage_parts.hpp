// Internal (plan_pipeline.cpp): a checkpoint's weights and optimizer arrays read from the pipeline
// stages one at a time (ParallelPlan::full_parts). Each stage's first rank of world rank 0's
// pipeline holds its stage's tensors whole; world rank 0 fetches the others' arrays as its writer
// reaches them, so it never holds more than its stage and one other array. Bits are moved, never
// computed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::dist_detail {

// What a stage answers for: each model tensor's values where this stage owns it (null elsewhere),
// and its optimizer arrays in the one-process optimizer's order.
struct StageArrays {
  std::vector<const float*> weights;  // (model tensors)
  std::vector<std::string> names;
  std::vector<uint64_t> sizes;
  std::vector<const float*> data;
};

// A stage's first rank, stage > 0: its arrays' names and sizes to stage 0, then the values stage 0
// asks for, until it says it is done. numel: (model tensors) each tensor's length.
void serve_parts(const StageArrays& mine, const std::vector<size_t>& numel, Communicator& pipeline);

// World rank 0 (stage 0's first rank): `use` gets the parts of the whole model: tensor t's weights
// from stage owner[t], the optimizer arrays of every stage in the one-process order (by model
// tensor, tensor_of naming an array's tensor; each tensor's arrays from its owner). Every stage is
// told it is done when `use` returns or throws.
void fetch_parts(const StageArrays& mine, const std::vector<size_t>& numel, const std::vector<int>& owner,
                 const std::function<size_t(const std::string&)>& tensor_of, Communicator& pipeline,
                 const std::function<void(const StateParts&)>& use);

}  // namespace sb::dist_detail
