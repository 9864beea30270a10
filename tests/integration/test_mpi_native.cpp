// allreduce=native, the vendor switch (docs/CONTRACT.md, vendor mode): each rank's partial
// gradient is rounded to fp32 and summed by MPI's float SUM, so the bits depend on the world size.
// The test reports whether 1 and 3 ranks differ and at which step (expected: they do, from the
// first step's gradients), and checks that the exact all-reduce keeps them equal meanwhile.
#include <doctest/doctest.h>

#include "mpi_support.hpp"

TEST_CASE("allreduce=native: 1 vs 3 ranks differ; allreduce=exact: they do not") {
  const std::vector<std::string> one =
      sb::test::result_lines(sb::test::train(0, "--allreduce native").output);
  const std::vector<std::string> three =
      sb::test::result_lines(sb::test::train(3, "--allreduce native").output);
  REQUIRE(one.size() == 9);
  REQUIRE(three.size() == one.size());
  size_t first = 0;
  while (first < one.size() && one[first] == three[first]) ++first;
  MESSAGE("allreduce=native, 1 vs 3 ranks: ",
          first == one.size()
              ? std::string("identical bits")
              : "first divergent line: '" + one[first] + "' vs '" + three[first] + "'");
  CHECK(first < one.size());
  CHECK(sb::test::result_lines(sb::test::train(3, "--allreduce exact").output) ==
        sb::test::result_lines(sb::test::train(0, "--allreduce exact").output));
}
