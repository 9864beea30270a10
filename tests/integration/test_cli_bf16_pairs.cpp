// numerics.bf16_dot=pairs end to end: `samebits train` (train.precision=bf16) records the same bits
// on every SAMEBITS_BF16_ISA path this CPU has (vdpbf16ps and its emulations), on 1–4 threads and
// under `mpirun -np 2` (diff exit 0); the chain order is other numerics (diff exit 1, the positive
// control), and `--numerics.bf16_dot chain` is the default bf16 run with its experiment id. The run
// file's environment names the path. Skipped (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include <cstdlib>

#include "integration/layout_runs.hpp"
#include "samebits/core/cpu/bf16_pairs_isa.hpp"

using namespace sbt;

namespace {

const std::string kConfig = tiny_config("precision = bf16\n") + "[numerics]\nbf16_dot = pairs\n";

// Trains kConfig into name.h5 with `args` under SAMEBITS_BF16_ISA=isa ("" = unset).
std::string train(const TempDir& dir, const std::string& name, const std::string& isa,
                  const std::vector<std::string>& args = {}) {
  const std::string out = dir / (name + ".h5");
  if (isa.empty()) ::unsetenv("SAMEBITS_BF16_ISA");
  else ::setenv("SAMEBITS_BF16_ISA", isa.c_str(), 1);
  std::vector<std::string> argv{"train", dir / "pairs.ini", "--out", out};
  argv.insert(argv.end(), args.begin(), args.end());
  const Result r = run(argv);
  ::unsetenv("SAMEBITS_BF16_ISA");
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  return out;
}

}  // namespace

TEST_CASE("bf16_dot=pairs: identical across paths, threads and ranks; other numerics than the chain") {
  TempDir dir;
  write_text(dir / "pairs.ini", kConfig);
  const std::string reference = train(dir, "ref", "scalar");
  int variants = 0;
  for (const std::string& isa : sb::bf16_pairs_isa_names()) {
    if (isa == "scalar" || !sb::bf16_pairs_isa_available(isa)) continue;
    for (const char* threads : {"1", "2", "4"}) {
      const std::string out = train(dir, isa + "_" + threads, isa, {"--run.threads", threads});
      const Result same = run({"diff", reference, out});
      CHECK_MESSAGE(same.code == 0, isa, " threads ", threads, ": ", same.output);
      ++variants;
    }
  }
  MESSAGE("pair-order training compared on ", variants, " path/thread variants (default path ", sb::bf16_pairs_isa(),
          ")");
  const Result inspect = run({"inspect", reference});
  CHECK_MESSAGE(inspect.output.find("bf16 pair kernel: scalar") != std::string::npos, inspect.output);

  const sb::test::Launch mpi =
      sb::test::mpirun_in(dir.path.string(), 2, samebits_binary() + " train pairs.ini --out np2.h5");
  REQUIRE_MESSAGE(mpi.exit_code == 0, mpi.output);
  check_identical(dir, "ref.h5", "np2.h5");

  const std::string chain = train(dir, "chain", "", {"--numerics.bf16_dot", "chain"});
  const Result apart = run({"diff", reference, chain});
  CHECK_MESSAGE(apart.code == 1, apart.output);
  write_text(dir / "bf16.ini", tiny_config("precision = bf16\n"));
  REQUIRE(run({"train", dir / "bf16.ini", "--out", dir / "bf16.h5"}).code == 0);
  check_identical(dir, "chain.h5", "bf16.h5");
}

TEST_CASE("bf16_dot=pairs needs train.precision=bf16: exit 2 naming the key") {
  TempDir dir;
  write_text(dir / "x.ini", tiny_config() + "[numerics]\nbf16_dot = pairs\n");
  const Result r = run({"train", dir / "x.ini", "--out", dir / "x.h5"});
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("numerics.bf16_dot=pairs") != std::string::npos, r.output);
  const Result bad = run({"train", dir / "x.ini", "--numerics.bf16_dot", "pair", "--out", dir / "y.h5"});
  CHECK(bad.code == 2);
  CHECK_MESSAGE(bad.output.find("numerics.bf16_dot") != std::string::npos, bad.output);
}
