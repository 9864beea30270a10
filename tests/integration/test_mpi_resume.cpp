// Elastic resume (docs/CONTRACT.md, "time" and "distribution"): a run checkpointed after
// step 4 at 2 ranks with the distributed optimizer (the owners' state gathered into the full
// state) and resumed at 3 ranks (rank 0 reads the checkpoint; each rank takes the state of the
// tensors it owns in a world of 3) ends bitwise as the uninterrupted one-process run: steps 5–8
// and the final weights and optimizer state. Also 3 ranks unsharded → 2 ranks sharded.
#include <doctest/doctest.h>

#include <filesystem>

#include "mpi_support.hpp"

namespace {

std::vector<std::string> tail(const std::vector<std::string>& lines, size_t n) {
  return {lines.end() - std::ptrdiff_t(n), lines.end()};
}

void check_resume(int save_ranks, bool save_sharded, int resume_ranks, bool resume_sharded) {
  CAPTURE(save_ranks);
  CAPTURE(resume_ranks);
  const std::vector<std::string> ref = sb::test::result_lines(sb::test::train(0, "").output);
  REQUIRE(ref.size() == 9);
  const std::string file =
      (std::filesystem::temp_directory_path() / ("sb_mpi_resume_" + std::to_string(getpid()) + ".bin")).string();
  const sb::test::Launch first = sb::test::train(
      save_ranks, std::string(save_sharded ? "--dist-optimizer " : "") + "--save-after 4 --save " + file);
  CHECK(sb::test::result_lines(first.output) == std::vector<std::string>(ref.begin(), ref.begin() + 4));
  const sb::test::Launch second =
      sb::test::train(resume_ranks, std::string(resume_sharded ? "--dist-optimizer " : "") + "--resume " + file);
  std::filesystem::remove(file);
  const std::vector<std::string> resumed = sb::test::result_lines(second.output);
  REQUIRE(resumed.size() == 5);  // steps 5–8 and the final state
  CHECK(resumed == tail(ref, 5));
}

}  // namespace

TEST_CASE("2 ranks sharded, checkpoint, 3 ranks sharded = one uninterrupted process") {
  check_resume(2, true, 3, true);
}

TEST_CASE("3 ranks, checkpoint, 2 ranks sharded = one uninterrupted process") { check_resume(3, false, 2, true); }
