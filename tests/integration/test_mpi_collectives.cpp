// The Communicator's MPI collectives that the exact all-reduce and the owners' reduce-scatter use
// (docs/DISTRIBUTED.md §7): uint8 MAX and int64 reduce-scatter with uneven (and empty) parts, at
// 2, 3 and 4 ranks, checked on every rank against their definitions (mpi_train_driver
// --check-collectives throws, and the job fails, on any difference).
#include <doctest/doctest.h>

#include "mpi_support.hpp"

TEST_CASE("MPI: allreduce_max_u8 and reduce_scatter_sum_u64 at 2, 3 and 4 ranks") {
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    const sb::test::Launch run = sb::test::train(ranks, "--check-collectives");
    CHECK(run.output.find("# collectives ok world " + std::to_string(ranks)) != std::string::npos);
  }
}
