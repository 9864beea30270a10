// The exact gradient all-reduce (docs/DISTRIBUTED.md §7): every rank ends with the exact sum over
// all ranks of its GradAccumulator — the same integers for any world size, partition and MPI/NCCL
// algorithm — at about 1.2-1.3× the bytes of a float all-reduce (det/block_wire.hpp).
#pragma once
#include <cstdint>

#include "samebits/core/backend.hpp"
#include "samebits/core/dist/communicator.hpp"

namespace sb {

// Collective: MAX all-reduce of the block ranges, encode, int64 SUM all-reduce of the words,
// decode. total_adds / total_status: the SUM of adds() and the OR of status() over all ranks.
void exact_allreduce(GradAccumulator& acc, Communicator& comm, uint64_t total_adds,
                     uint32_t total_status);

}  // namespace sb
