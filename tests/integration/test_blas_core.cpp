// The vendor BLAS kernel (core/cpu/blas_version.hpp, experiments/cli/blas_core.cpp): this CPU's
// OpenBLAS core by cpuid; a core below it (here made with OPENBLAS_CORETYPE=Prescott, what Debian's
// OpenBLAS 0.3.21 picks on CPUs newer than it) replaced by the command line when asked
// (SAMEBITS_BLAS_CORE=force; by default a user's OPENBLAS_CORETYPE is kept and named), said by
// selftest and recorded in the run file's environment; the deterministic bits never depend on it.
#include <doctest/doctest.h>
#include <stdlib.h>

#include "integration/test_cli_support.hpp"
#include "samebits/core/cpu/blas_version.hpp"

namespace {

using namespace sbt;

// Sets (or, with nullptr, removes) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* was = ::getenv(name)) was_ = was, had_ = true;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, was_.c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string was_;
  bool had_ = false;
};

// The selftest's "vendor BLAS" line.
std::string blas_line(const Result& r) {
  const size_t at = r.output.find("vendor BLAS");
  REQUIRE_MESSAGE(at != std::string::npos, r.output);
  return r.output.substr(at, r.output.find('\n', at) - at);
}

}  // namespace

TEST_CASE("OpenBLAS core names and this CPU's core by cpuid") {
  CHECK(sb::blas_core_level("Prescott") == 0);
  CHECK(sb::blas_core_level("Sandybridge") == 1);
  CHECK(sb::blas_core_level("Haswell") == 2);
  CHECK(sb::blas_core_level("Zen") == 2);
  CHECK(sb::blas_core_level("SkylakeX") == 3);
  CHECK(sb::blas_core_level("Cooperlake") == 3);
  const std::string cpu = sb::blas_core_for_this_cpu();
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    CHECK(sb::blas_core_level(cpu) == 3);
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(sb::blas_core_level(cpu) == 2);
  MESSAGE("this CPU's OpenBLAS core: ", cpu, "; loaded here: ", sb::blas_core_text());
}

TEST_CASE("a core below this CPU's: kept and named by default, replaced with SAMEBITS_BLAS_CORE=force") {
  const std::string cpu = sb::blas_core_for_this_cpu();
  if (sb::blas_core_level(cpu) == 0) {
    MESSAGE("this CPU has no core above Prescott: nothing to replace");
    return;
  }
  const ScopedEnv replaced(sb::kBlasCoreReplacedVar, nullptr);
  const ScopedEnv old_core("OPENBLAS_CORETYPE", "Prescott");
  {
    const Result kept = run({"selftest"});
    CHECK(kept.code == 0);
    CHECK(blas_line(kept).find("Prescott (OPENBLAS_CORETYPE; this CPU's is " + cpu + ")") != std::string::npos);
  }
  {
    const ScopedEnv force("SAMEBITS_BLAS_CORE", "force");
    const Result fixed = run({"selftest"});
    CHECK(fixed.code == 0);
    CHECK(blas_line(fixed).find(cpu + " (set by samebits: OpenBLAS named this CPU Prescott)") != std::string::npos);
    // The run file records it; a vendor-GEMM run trains on it.
    TempDir dir;
    write_text(dir / "v.ini", tiny_config("[numerics]\ngemm = vendor\n"));
    const Result train = run({"train", dir / "v.ini", "--train.steps", "2", "--out", dir / "v.h5"});
    REQUIRE_MESSAGE(train.code == 0, train.output);
    const std::string env = sb::h5::File::open(dir / "v.h5").attr_string("environment");
    CHECK_MESSAGE(
        env.find("OpenBLAS core: " + cpu + " (set by samebits: OpenBLAS named this CPU Prescott)") != std::string::npos,
        env);
  }
  {
    const ScopedEnv keep("SAMEBITS_BLAS_CORE", "keep");
    CHECK(blas_line(run({"selftest"})).find("Prescott (OPENBLAS_CORETYPE") != std::string::npos);
  }
}

TEST_CASE("the deterministic bits do not depend on the BLAS core") {
  TempDir dir;
  write_text(dir / "d.ini", tiny_config());
  REQUIRE(run({"train", dir / "d.ini", "--train.steps", "3", "--out", dir / "native.h5"}).code == 0);
  {
    const ScopedEnv old_core("OPENBLAS_CORETYPE", "Prescott");
    REQUIRE(run({"train", dir / "d.ini", "--train.steps", "3", "--out", dir / "prescott.h5"}).code == 0);
  }
  const Result diff = run({"diff", dir / "native.h5", dir / "prescott.h5"});
  CHECK_MESSAGE(diff.code == 0, diff.output);
}
