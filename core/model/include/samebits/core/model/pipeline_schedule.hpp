// The leaves of a pipeline stage (docs/DISTRIBUTED.md §11): a rank's leaves are the micro-batches
// of its pipeline, run in the order of parallel.pp_schedule — 1F1B (Narayanan et al. 2021, as
// Megatron-LM's forward_backward_pipelining_without_interleaving) or GPipe (Huang et al. 2019).
// Determinism: a stage passes activations and their gradients bit for bit, and each leaf's
// gradient goes into the exact accumulator (rule 4), so neither the schedule nor the number of
// stages can change a bit: the sums are those of accumulate_leaves on one process.
#pragma once
#include <span>

#include "samebits/core/config.hpp"
#include "samebits/core/model/gpt.hpp"

namespace sb {

// accumulate_leaves for a model with a pipeline group: every stage of the pipeline calls it with
// the same leaves. The last stage merges each leaf's losses into loss_sum (the others add none);
// each stage adds its tensors' part of every leaf gradient into acc (one leaf at a time) and
// pass.leaf_squares. pass.after_forward runs on every stage after a leaf's forward,
// pass.before_forward before its forward and before its backward.
void accumulate_pipelined(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc,
                          det::ExactSum& loss_sum, const LeafPass& pass, PipeSchedule schedule);

}  // namespace sb
