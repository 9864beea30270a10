// numerics.gemm=exact end to end: `samebits train` records the same bits on every SAMEBITS_ISA path
// this CPU has, on 1–3 threads, with micro-leaves and across a resume (diff exit 0), and other
// numerics than the canonical run (diff exit 1); a path the CPU lacks exits 2 naming SAMEBITS_ISA.
// MPI ranks: test_cli_exact_mpi.cpp.
#include <doctest/doctest.h>

#include <cstdlib>

#include "integration/test_cli_support.hpp"
#include "samebits/core/cpu/exact_isa.hpp"

using namespace sbt;

namespace {

// Trains `name`.ini (the tiny experiment with exact GEMMs) into name.h5 with `args`, under
// SAMEBITS_ISA=isa ("" = unset).
std::string train(const TempDir& dir, const std::string& name, const std::string& isa,
                  const std::vector<std::string>& args = {}) {
  const std::string ini = dir / (name + ".ini"), out = dir / (name + ".h5");
  std::string text = tiny_config("checkpoint_every = 5\n");
  text += "[numerics]\ngemm = exact\n";
  write_text(ini, text);
  if (isa.empty()) ::unsetenv("SAMEBITS_ISA");
  else ::setenv("SAMEBITS_ISA", isa.c_str(), 1);
  std::vector<std::string> argv{"train", ini, "--out", out};
  argv.insert(argv.end(), args.begin(), args.end());
  const Result r = run(argv);
  ::unsetenv("SAMEBITS_ISA");
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  return out;
}

}  // namespace

TEST_CASE("gemm=exact: identical across ISA paths, threads, micro-leaves and resume; other numerics than canonical") {
  TempDir dir;
  const std::string reference = train(dir, "ref", "scalar");
  int variants = 0;
  for (const std::string& isa : sb::exact_gemm_isa_names()) {
    if (isa == "scalar" || !sb::exact_gemm_isa_available(isa)) continue;
    for (const char* threads : {"1", "3"}) {
      const std::string out = train(dir, isa + "_" + threads, isa, {"--run.threads", threads});
      const Result same = run({"diff", reference, out});
      CHECK_MESSAGE(same.code == 0, isa, " threads ", threads, ": ", same.output);
      ++variants;
    }
  }
  MESSAGE("exact training compared on ", variants, " ISA/thread variants");
  const std::string micro = train(dir, "micro", "", {"--run.threads", "2", "--micro-leaves", "1"});
  CHECK_MESSAGE(run({"diff", reference, micro}).code == 0, "micro-leaves");

  const std::string resumed = train(dir, "resumed", "", {"--stop-after", "7"});
  train(dir, "resumed", "", {"--resume"});
  CHECK_MESSAGE(run({"diff", reference, resumed}).code == 0, "resume");

  write_text(dir / "canonical.ini", tiny_config());
  REQUIRE(run({"train", dir / "canonical.ini", "--out", dir / "canonical.h5"}).code == 0);
  const Result apart = run({"diff", reference, dir / "canonical.h5"});
  CHECK_MESSAGE(apart.code == 1, apart.output);
}

TEST_CASE("gemm=exact: a forced path this CPU lacks exits 2 naming SAMEBITS_ISA") {
  TempDir dir;
  write_text(dir / "x.ini", tiny_config() + "[numerics]\ngemm = exact\n");
  if (!sb::exact_gemm_isa_available("amx")) {
    ::setenv("SAMEBITS_ISA", "amx", 1);
    const Result r = run({"train", dir / "x.ini", "--out", dir / "x.h5"});
    ::unsetenv("SAMEBITS_ISA");
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("SAMEBITS_ISA=amx") != std::string::npos, r.output);
  }
}
