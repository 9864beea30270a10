// A checkpoint's content read on one rank, delivered to all (elastic resume: the run file is read
// on rank 0, whatever the world size that wrote it). Bits are copied, never converted.
#pragma once
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/train_state.hpp"

namespace sb {

// Collective: state ← root's state on every rank (the other ranks' content is replaced).
void broadcast_state(TrainerState& state, int root, Communicator& comm);

}  // namespace sb
