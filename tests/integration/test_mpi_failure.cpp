// Failure handling: a rank that dies mid-run (SIGKILL), or that meets an sb::Error while the
// others wait in a collective, ends the whole 3-rank job with a non-zero exit within 30 s — never
// a hang — and an error names the failing rank's message. Two error paths: the error leaves the
// program through main (the communicator, destroyed while unwinding, skips MPI_Finalize), and
// the program catches it and calls end_job_on_error (MPI_Abort).
#include <doctest/doctest.h>

#include "mpi_support.hpp"

namespace {

sb::test::Launch fail(const std::string& mode) {
  const std::string command =
      sb::test::mpirun(3) + " " + sb::test::driver() + " --steps 40 --fail-rank 1 --fail-step 3 --fail-mode " + mode;
  return sb::test::launch(command, 60);
}

}  // namespace

TEST_CASE("a killed rank ends the job") {
  const sb::test::Launch r = fail("kill");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != 124);
  CHECK(r.seconds < 30.0);
}

TEST_CASE("an error on one rank ends the job with its message") {
  for (const std::string mode : {"error", "error-abort"}) {
    CAPTURE(mode);
    const sb::test::Launch r = fail(mode);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.exit_code != 124);
    CHECK(r.seconds < 30.0);
    CHECK(r.output.find("a deliberate failure on rank 1 before step 4") != std::string::npos);
  }
}
