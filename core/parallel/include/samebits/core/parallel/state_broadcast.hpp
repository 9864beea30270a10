// A checkpoint's content read on one rank, delivered to all (elastic resume: the run file is read
// on rank 0, whatever the world size that wrote it). Bits are copied, never converted.
#pragma once
#include <vector>

#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/train_state.hpp"

namespace sb {

// Collective: state ← root's state on every rank (the other ranks' content is replaced).
void broadcast_state(TrainerState& state, int root, Communicator& comm);
// Collective: root's `arrays` on every rank — root's own, the others' decoded into `received`.
const std::vector<StateArray>& broadcast_arrays(const std::vector<StateArray>& arrays,
                                                std::vector<StateArray>& received, int root, Communicator& comm);
// Collective: root's flat buffer `full` of `n` values on every rank — root's own, the others' in
// `received`; throws sb::Error on every rank when root's holds another count.
const std::vector<float>& broadcast_flat(const std::vector<float>& full, std::vector<float>& received, size_t n,
                                         int root, Communicator& comm);

}  // namespace sb
