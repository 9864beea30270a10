// allreduce=native, the vendor switch (docs/CONTRACT.md, vendor mode): each rank's partial
// gradient is rounded to fp32 and summed by MPI's float SUM, so the bits depend on the world size.
// The test reports whether 1 and 3 ranks differ and at which step (expected: they do, from the
// first step's gradients), and checks that the exact all-reduce keeps them equal meanwhile. With
// leaf_sum=native as well (vendor mode's gradient accumulation) every rank's partial sum is its
// leaves' fp32 sum: the run completes on 1 and 3 ranks and its bits are neither the exact leaf
// sum's nor the same across world sizes.
#include <doctest/doctest.h>

#include "mpi_support.hpp"

TEST_CASE("allreduce=native: 1 vs 3 ranks differ; allreduce=exact: they do not") {
  const std::vector<std::string> one = sb::test::result_lines(sb::test::train(0, "--allreduce native").output);
  const std::vector<std::string> three = sb::test::result_lines(sb::test::train(3, "--allreduce native").output);
  REQUIRE(one.size() == 9);
  REQUIRE(three.size() == one.size());
  size_t first = 0;
  while (first < one.size() && one[first] == three[first]) ++first;
  MESSAGE("allreduce=native, 1 vs 3 ranks: ",
          first == one.size() ? std::string("identical bits")
                              : "first divergent line: '" + one[first] + "' vs '" + three[first] + "'");
  CHECK(first < one.size());
  CHECK(sb::test::result_lines(sb::test::train(3, "--allreduce exact").output) ==
        sb::test::result_lines(sb::test::train(0, "--allreduce exact").output));
}

TEST_CASE(
    "leaf_sum=native with allreduce=native: 1 and 3 ranks train, differ from each other and from exact leaf sums") {
  const std::vector<std::string> exact_sums = sb::test::result_lines(sb::test::train(0, "--allreduce native").output);
  const std::vector<std::string> one =
      sb::test::result_lines(sb::test::train(0, "--allreduce native --leaf-sum native").output);
  const std::vector<std::string> three =
      sb::test::result_lines(sb::test::train(3, "--allreduce native --leaf-sum native").output);
  REQUIRE(one.size() == exact_sums.size());
  REQUIRE(three.size() == one.size());
  CHECK(one != exact_sums);
  CHECK(three != one);
}
