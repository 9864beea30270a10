// samebits trace between a one-process run and a run recorded under `mpirun -np N` (docs/TRACE.md):
// of the same deterministic config, exit 0 and every op of the traced step equal — the 3-rank run
// is replayed on 3 simulated ranks and its stream lines up with the one process's, row for row;
// under numerics.allreduce=native (a float SUM of the ranks' rounded partial sums) against 2 ranks,
// the origin is the gradient all-reduce's row; a PP 2 run (stages on simulated ranks that pass
// activations point to point) lines up with one process too. Against DP 2 × TP 2, DP 2 × TP 3 and
// DP 2 × TP 2 × PP 2 the one process is replayed at the tensor-parallel layout (its deterministic
// numerics): every op equal; against a vendor DP 2 × TP 2 run the origin is the first op of a
// native reduction (and a vendor one process against it is refused), against a DP 2 × TP 2 run
// with only the vendor GEMM the first shard GEMM; a replay at the other layout that does not
// reproduce its run (a planted op) is an error. Op counts are derived, not pinned: both sides of a
// layout's trace run as many ops, and more than the one process traced against itself.
// Skipped (exit 77) without MPI/mpirun in this build.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <regex>
#include <tuple>
#include <utility>

#include "integration/mpi_launch.hpp"
#include "integration/test_cli_support.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/forwarding_backend.hpp"

namespace {

using namespace sbt;

// `samebits train INI` for 4 steps into one.h5, then under `mpirun -np ranks` (with `layout`, of
// `many_ini`, default INI) into many.h5, in dir.
void train_one_and_many(const TempDir& dir, const std::string& ini, int ranks, const std::string& layout = "",
                        const std::string& many_ini = "") {
  const std::string d = dir.path.string();
  REQUIRE(run({"train", ini, "--train.steps", "4", "--out", "one.h5"}, SpawnOptions{0, d}).code == 0);
  const sb::test::Launch many = sb::test::mpirun_in(
      d, ranks,
      samebits_binary() + " train " + (many_ini.empty() ? ini : many_ini) + " --train.steps 4 --out many.h5 " + layout);
  REQUIRE_MESSAGE(many.exit_code == 0, many.output);
  const Result inspect = run({"inspect", dir / "many.h5"});
  REQUIRE_MESSAGE(inspect.output.find("world size " + std::to_string(ranks)) != std::string::npos, inspect.output);
}

// The "N ops in A, M in B" of a trace report: {N, M}.
std::pair<long, long> op_counts(const std::string& report) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(report, m, std::regex("(\\d+) ops in A, (\\d+) in B")), report);
  return {std::stol(m[1]), std::stol(m[2])};
}

// The op counts of a layout's trace, derived rather than pinned: the one process replayed at the
// layout and the layout's own replay run the same ops (N = M), and a layout splits ops into
// shard ops and adds the passes between ranks, so it runs more than one process does (the one
// process traced against itself, `step`).
void check_layout_counts(const TempDir& dir, const Result& trace, const std::string& step) {
  const auto [a, b] = op_counts(trace.output);
  CHECK(a == b);
  const Result alone = run({"trace", dir / "one.h5", dir / "one.h5", "--step", step});
  REQUIRE_MESSAGE(alone.code == 0, alone.output);
  const auto [one, same] = op_counts(alone.output);
  CHECK(one == same);
  CHECK_MESSAGE(a > one, trace.output);
}

// A divergent trace whose origin (its text contains `origin`) is of kind `op`: inputs equal, output not.
void check_op_origin(const Result& trace, const std::string& origin) {
  CHECK_MESSAGE(trace.code == 1, trace.output);
  CHECK_MESSAGE(trace.output.find(origin) != std::string::npos, trace.output);
  CHECK(trace.output.find("its inputs are bitwise equal in both runs; its output differs") != std::string::npos);
}

// gelu_forward one ULP up in its first element: a difference the layout's replay would carry.
class PlantedGelu final : public sb::ForwardingBackend {
 public:
  explicit PlantedGelu(std::unique_ptr<sb::Backend> cpu) : ForwardingBackend(*cpu), cpu_(std::move(cpu)) {}
  void gelu_forward(float* out, const float* inp, int64_t n) override {
    ForwardingBackend::gelu_forward(out, inp, n);
    out[0] = std::nextafter(out[0], INFINITY);
  }

 private:
  std::unique_ptr<sb::Backend> cpu_;
};

}  // namespace

TEST_CASE("samebits trace: a 1-process run against an mpirun -np 3 run of one config: exit 0, every op equal") {
  TempDir dir;
  write_text(dir / "tiny.ini", tiny_config());
  train_one_and_many(dir, "tiny.ini", 3);
  for (const std::string step : {"1", "3"}) {
    const Result trace = run({"trace", dir / "one.h5", dir / "many.h5", "--step", step});
    CAPTURE(step);
    CHECK_MESSAGE(trace.code == 0, trace.output);
    CHECK(trace.output.find("every op equal") != std::string::npos);
    CHECK(trace.output.find("3 simulated ranks") != std::string::npos);
  }
}

TEST_CASE("samebits trace: allreduce=native on 1 process against mpirun -np 2: the origin is the all-reduce") {
  TempDir dir;
  write_text(dir / "native.ini", tiny_config("[numerics]\nallreduce = native\n"));
  train_one_and_many(dir, "native.ini", 2);
  const Result trace = run({"trace", dir / "one.h5", dir / "many.h5"});
  check_op_origin(trace, ", allreduce gradient (leaf -");
  CHECK(trace.output.find("2 simulated ranks") != std::string::npos);
}

TEST_CASE("samebits trace: a 1-process run against PP 2 and DP 2 x TP 2 x PP 2 (a tied head): every op equal") {
  std::string ini = tiny_config();
  ini.replace(ini.find("n_layer = 1"), 11, "n_layer = 2");
  // The one process replayed at the pipeline's layout: its stages' step rows are the pipeline's.
  for (const auto& [ranks, layout] :
       {std::tuple{2, "--parallel.pp 2"}, std::tuple{8, "--parallel.tp 2 --parallel.pp 2"}}) {
    TempDir dir;
    write_text(dir / "pp.ini", ini);
    train_one_and_many(dir, "pp.ini", ranks, layout);
    const Result trace = run({"trace", dir / "one.h5", dir / "many.h5", "--step", "3"});
    CAPTURE(std::string(layout));
    CHECK_MESSAGE(trace.code == 0, trace.output);
    CHECK(trace.output.find("every op equal") != std::string::npos);
    check_layout_counts(dir, trace, "3");
    CHECK(trace.output.find("replayed at B's layout (recorded at parallel.tp=1, 1 process") != std::string::npos);
  }
}

TEST_CASE("samebits trace: a 1-process run against DP 2 x TP 2 and DP 2 x TP 3: exit 0, every op equal") {
  std::string ini = tiny_config("", 48);
  ini.replace(ini.find("n_head = 2"), 10, "n_head = 6");
  for (const int tp : {2, 3}) {
    TempDir dir;
    write_text(dir / "tp.ini", ini);
    train_one_and_many(dir, "tp.ini", 2 * tp, "--parallel.tp " + std::to_string(tp));
    const Result trace = run({"trace", dir / "one.h5", dir / "many.h5", "--step", "3"});
    CAPTURE(tp);
    CHECK_MESSAGE(trace.code == 0, trace.output);
    CHECK(trace.output.find("every op equal") != std::string::npos);
    // Every rank's shard ops: the leaves' of each group, the optimizer's of DP rank 0's group.
    check_layout_counts(dir, trace, "3");
    CHECK(trace.output.find(", tp " + std::to_string(tp) + ", replayed at B's layout (recorded at parallel.tp=1") !=
          std::string::npos);
  }
}

TEST_CASE("samebits trace: deterministic 1 process against vendor DP 2 x TP 2: exit 1, the first native op") {
  TempDir dir;
  write_text(dir / "tiny.ini", tiny_config());
  write_text(dir / "vendor.ini", tiny_config("[numerics]\nmode = vendor\nallreduce = exact\nleaf_sum = exact\n"));
  train_one_and_many(dir, "tiny.ini", 4, "--parallel.tp 2", "vendor.ini");
  check_op_origin(run({"trace", dir / "one.h5", dir / "many.h5"}), ", h.0.ln1 norm forward layernorm_forward (leaf 0");
  CHECK(run({"trace", dir / "one.h5", dir / "many.h5"}).output.find("origin: op 1 of ") != std::string::npos);
  // Vendor at TP 1 against vendor at TP 2: neither gives its bits at the other's layout.
  REQUIRE(run({"train", "vendor.ini", "--train.steps", "4", "--out", "vendor.h5"}, SpawnOptions{0, dir.path.string()})
              .code == 0);
  const Result both = run({"trace", dir / "vendor.h5", dir / "many.h5"});
  CHECK_MESSAGE(both.code == 2, both.output);
  CHECK(both.output.find("(parallel.tp=1) and ") != std::string::npos);
  CHECK(both.output.find("(parallel.tp=2) split their ops differently and neither runs deterministic numerics") !=
        std::string::npos);
}

TEST_CASE("samebits trace: deterministic 1 process against DP 2 x TP 2 with vendor GEMM only: a shard GEMM") {
  // The layout's own GEMMs change the bits: every reduction canonical but numerics.gemm = vendor.
  // The one process, replayed at the TP layout, and the TP run agree up to the first GEMM on a
  // shard, whose inputs are equal and whose output is not.
  TempDir dir;
  write_text(dir / "tiny.ini", tiny_config());
  write_text(dir / "vendor.ini", tiny_config("[numerics]\ngemm = vendor\n"));
  train_one_and_many(dir, "tiny.ini", 4, "--parallel.tp 2", "vendor.ini");
  const Result trace = run({"trace", dir / "one.h5", dir / "many.h5"});
  check_op_origin(trace, "origin: op ");
  const size_t origin = trace.output.find("origin: op ");
  REQUIRE(origin != std::string::npos);
  const std::string line = trace.output.substr(origin, trace.output.find('\n', origin) - origin);
  CHECK_MESSAGE(line.find(" matmul ") != std::string::npos, line);
  CHECK_MESSAGE(line.find("h.0.attn.qkv matmul forward") != std::string::npos, line);  // the first GEMM, a shard's
  CHECK(trace.output.find(", tp 2, replayed at B's layout (recorded at parallel.tp=1") != std::string::npos);
}

TEST_CASE("samebits trace: a run replayed at the other's layout must reproduce its recorded step") {
  TempDir dir;
  write_text(dir / "tiny.ini", tiny_config());
  train_one_and_many(dir, "tiny.ini", 2, "--parallel.tp 2");
  sb::cli::TraceOptions options;
  options.step = 1;
  CHECK_NOTHROW(sb::cli::trace_runs(dir / "one.h5", dir / "many.h5", options));
  options.backend_a = [](const sb::Config& c) {
    return std::make_unique<PlantedGelu>(sb::make_cpu_backend(sb::to_numerics(c)));
  };
  CHECK_THROWS_WITH(sb::cli::trace_runs(dir / "one.h5", dir / "many.h5", options),
                    doctest::Contains("replayed at B's layout (recorded at parallel.tp=1, 1 process; deterministic "
                                      "numerics give the same bits at any layout) does not reproduce the parameters it "
                                      "records after step 1"));
}
