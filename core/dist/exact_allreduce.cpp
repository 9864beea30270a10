// The exact gradient all-reduce: four collective steps around the accumulator's own codec. The
// wire layout is a function of the MAX-reduced ranges and total_adds, which every rank has alike,
// so every rank passes the same word count to the SUM (MPI's and NCCL's requirement).
#include "samebits/core/dist/exact_allreduce.hpp"

namespace sb {

void exact_allreduce(GradAccumulator& acc, Communicator& comm, uint64_t total_adds,
                     uint32_t total_status) {
  comm.allreduce_max_u8(acc.block_ranges(), acc.range_bytes());
  size_t words = 0;
  int64_t* wire = acc.encode(total_adds, &words);
  comm.allreduce_sum_i64(wire, words);
  // In a world of one the SUM is the identity and decode would rebuild the same sums, adds and
  // status (the payload above is still counted, so it equals every world size's).
  if (comm.size() > 1) acc.decode(total_adds, total_status);
}

}  // namespace sb
