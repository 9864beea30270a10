// World-size invariance of the Muon variants (docs/OPTIM.md §1.1): NorMuon with split Q/K/V,
// cautious weight decay and QK-clip (whose per-head maxima are gathered across ranks) gives, after
// every step, the one-process bits under mpirun with 3 ranks, with and without the distributed
// optimizer (which then gathers NorMuon's second moment for the final state); and so does
// train.schedule = adaptive, whose gain comes from the ranks' all-reduced exact statistics.
#include <doctest/doctest.h>

#include "mpi_support.hpp"

TEST_CASE("Muon variants: every step's bits are the same in 1 and 3 ranks, sharded or not") {
  const sb::test::Launch one = sb::test::train(0, "--muon-variants");
  const std::vector<std::string> ref = sb::test::result_lines(one.output);
  REQUIRE(ref.size() == 9);  // 8 steps and the final state
  const sb::test::Launch plain = sb::test::train(0, "");
  CHECK(sb::test::result_lines(plain.output) != ref);  // the variants change the training
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    const sb::test::Launch run =
        sb::test::train(3, std::string("--muon-variants") + (sharded ? " --dist-optimizer" : ""));
    CHECK(sb::test::result_lines(run.output) == ref);
  }
}

TEST_CASE("adaptive lr: every step's bits are the same in 1 and 3 ranks, sharded or not") {
  const sb::test::Launch one = sb::test::train(0, "--adaptive-lr");
  const std::vector<std::string> ref = sb::test::result_lines(one.output);
  REQUIRE(ref.size() == 9);
  CHECK(sb::test::result_lines(sb::test::train(0, "").output) != ref);
  for (bool sharded : {false, true}) {
    CAPTURE(sharded);
    const sb::test::Launch run =
        sb::test::train(3, std::string("--adaptive-lr") + (sharded ? " --dist-optimizer" : ""));
    CHECK(sb::test::result_lines(run.output) == ref);
  }
}
