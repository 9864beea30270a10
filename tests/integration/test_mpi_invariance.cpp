// World-size invariance (docs/CONTRACT.md rule 4): a tiny GPT trained 8 steps
// with Muon (+ AdamW for the rest) on 12 leaves gives, after every step, the same loss,
// validation loss, parameter and gradient fingerprints and statistics, and the same final
// weights and optimizer state, in one process and under mpirun with 2, 3 and 4 ranks (uneven
// leaf splits), with and without the distributed optimizer, in fp32 and bf16. The distributed
// optimizer spreads the optimizer state (the ranks' bytes add up to one process's, and no rank
// holds more than 3/4 of it) at the price of its owners' broadcasts, and reduce-scatters the
// gradient; the gradient all-reduce's payload is the same at every world size. The host-staged communicator (what CUDA
// ranks sharing a GPU use) gives the same bits under 2 and 3 ranks, and so do sharded fp16 runs.
#include <doctest/doctest.h>

#include <numeric>

#include "mpi_support.hpp"

namespace {

void check_world_sizes(const std::string& precision) {
  const std::string args = "--precision " + precision;
  const sb::test::Launch one = sb::test::train(0, args);
  const std::vector<std::string> ref = sb::test::result_lines(one.output);
  REQUIRE(ref.size() == 9);  // 8 steps and the final state
  const std::vector<unsigned long long> full = sb::test::state_bytes(one.output);
  REQUIRE(full.size() == 1);
  for (int ranks : {2, 3, 4}) {
    for (bool sharded : {false, true}) {
      CAPTURE(ranks);
      CAPTURE(sharded);
      const sb::test::Launch run = sb::test::train(ranks, args + (sharded ? " --dist-optimizer" : ""));
      CHECK(sb::test::result_lines(run.output) == ref);
      // The gradient's all-reduce payload does not depend on the world size; the distributed
      // optimizer reduce-scatters it instead (each owner receives its tensors' part). Every owner
      // broadcasts its weights in place (at least one call each: one per run of adjacent tensors
      // it owns).
      if (!sharded) {
        CHECK(sb::test::first_step_traffic(run.output, "allreduce_u64") ==
              sb::test::first_step_traffic(one.output, "allreduce_u64"));
      }
      CHECK(sb::test::first_step_traffic(run.output, "reduce_scatter").empty() == !sharded);
      const std::string broadcasts = sb::test::first_step_traffic(run.output, "broadcast");
      CHECK(broadcasts.empty() == !sharded);
      if (sharded) {
        REQUIRE(broadcasts.rfind("broadcast=", 0) == 0);
        CHECK(std::stoul(broadcasts.substr(10)) >= static_cast<unsigned long>(ranks));
      }
      const std::vector<unsigned long long> bytes = sb::test::state_bytes(run.output);
      REQUIRE(bytes.size() == size_t(ranks));
      if (!sharded) {
        for (unsigned long long b : bytes) CHECK(b == full[0]);
        continue;
      }
      CHECK(std::accumulate(bytes.begin(), bytes.end(), 0ull) == full[0]);
      for (unsigned long long b : bytes) CHECK(4 * b <= 3 * full[0]);
    }
  }
}

}  // namespace

TEST_CASE("host-staged MPI (as CUDA ranks sharing a GPU use): the same bits, each buffer staged") {
  const sb::test::Launch one = sb::test::train(0, "--dist-optimizer");
  const std::vector<std::string> ref = sb::test::result_lines(one.output);
  REQUIRE(ref.size() == 9);
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    const sb::test::Launch run = sb::test::train(ranks, "--dist-optimizer --staged");
    CHECK(sb::test::result_lines(run.output) == ref);
    CHECK(run.output.find("cpu buffers staged through the host") != std::string::npos);
    CHECK(sb::test::first_step_traffic(run.output, "reduce_scatter").rfind("reduce_scatter=1x", 0) == 0);
  }
}

TEST_CASE("fp32: every step's bits are the same in 1, 2, 3 and 4 ranks, sharded or not") { check_world_sizes("fp32"); }

TEST_CASE("bf16: every step's bits are the same in 1, 2, 3 and 4 ranks, sharded or not") { check_world_sizes("bf16"); }

TEST_CASE("fp16 (loss scaling): the reduce-scattered sharded ranks have the one-process bits") {
  const sb::test::Launch one = sb::test::train(0, "--precision fp16");
  const std::vector<std::string> ref = sb::test::result_lines(one.output);
  REQUIRE(ref.size() == 9);
  for (int ranks : {2, 3}) {
    CAPTURE(ranks);
    const sb::test::Launch run = sb::test::train(ranks, "--precision fp16 --dist-optimizer");
    CHECK(sb::test::result_lines(run.output) == ref);
  }
}
