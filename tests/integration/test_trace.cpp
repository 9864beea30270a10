// samebits trace (experiments/include/samebits/cli/trace.hpp) on the tiny GPT: the origin it names
// for each pair of the acceptance — a vendor GEMM, a native reduction, bf16's first GEMM, the
// first reader of a 1-ULP-perturbed weight, exactly the one op a planted backend computes in
// another order — and
// equal streams for 1 process against 3 simulated ranks and micro-leaves; different experiments
// and an unreachable step are one error each (exit 2 from the command).
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/forwarding_backend.hpp"
#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/det/fingerprint.hpp"
#include "support/tiny_gpt.hpp"

namespace {

using sb::Config;
using sb::cli::TraceResult;

// The tiny GPT (2 layers, 4 leaves) for `steps` steps on 2 threads.
Config tiny(int64_t steps = 4) {
  sb::test::TinyGpt t;
  t.steps = steps;
  t.warmup = 1;
  t.threads = 2;
  Config c = sb::test::tiny_gpt_config(t);
  c.run.progress = sb::Progress::off;
  return c;
}

std::string record(Config c, const std::string& path) {
  c.run.out = path;
  std::ostringstream log;
  sb::cli::train_run(c, sb::cli::TrainRunOptions{}, log);
  return path;
}

// A run of `c` recorded at `path`, and the stream `samebits trace` replays for its step `step`.
struct Replay {
  sb::cli::ReplaySetup one;          // the run's recorded execution (one process)
  sb::TrainerState state;            // after step − 1
  std::vector<sb::trace::Row> rows;  // step's stream on one process, values kept
};

Replay replay(const Config& c, const std::string& path, int64_t step) {
  const sb::run::RunReader run = sb::run::RunReader::open(record(c, path));
  Replay r{sb::cli::replay_setup(run), {}, {}};
  std::string source;
  r.state = sb::cli::reachable_state(run, r.one, step - 1, source);
  r.rows = sb::cli::replay_stream(r.one, r.state, step);
  return r;
}

const sb::trace::Row& origin_row(const TraceResult& r) {
  REQUIRE(r.comparison.origin);
  return r.a[*r.comparison.origin];
}

// Every row before the origin has equal inputs and outputs in both streams.
void check_equal_before_origin(const TraceResult& r) {
  for (size_t i = 0; i < *r.comparison.origin; ++i) {
    REQUIRE(r.a[i].inputs == r.b[i].inputs);
    REQUIRE(r.a[i].outputs == r.b[i].outputs);
  }
}

// bias_backward's sums over the tokens in descending order at its `planted`-th call (0-based):
// a different reduction order in one op of one layer, the rest as the CPU backend computes it.
class PlantedBackend final : public sb::ForwardingBackend {
 public:
  PlantedBackend(std::unique_ptr<sb::Backend> cpu, int planted)
      : ForwardingBackend(*cpu), cpu_(std::move(cpu)), planted_(planted) {}
  void bias_backward(float* dbias, const float* dout, int N, int OC) override {
    if (calls_++ != planted_) return ForwardingBackend::bias_backward(dbias, dout, N, OC);
    for (int o = 0; o < OC; ++o) {
      float s = 0.0f;
      for (int n = N - 1; n >= 0; --n) s += dout[size_t(n) * size_t(OC) + size_t(o)];
      dbias[o] = s;
    }
  }

 private:
  std::unique_ptr<sb::Backend> cpu_;
  int planted_;
  int calls_ = 0;
};

}  // namespace

TEST_CASE("trace: vendor GEMM against canonical: the origin is a GEMM at step 1") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  Config v = tiny();
  v.numerics.gemm = sb::GemmMode::vendor;
  const TraceResult r = sb::cli::trace_runs(a, record(v, dir / "vendor.h5"), {});
  CHECK(r.first_divergent_step == 1);
  CHECK(r.step == 1);
  CHECK(r.comparison.origin_kind == "op");
  CHECK(origin_row(r).op == "gemm");
  check_equal_before_origin(r);
  REQUIRE(!r.comparison.propagation.empty());
  CHECK(r.comparison.propagation.front().row == *r.comparison.origin);
  CHECK(r.comparison.propagation.front().max_ulp > 0);
  CHECK(r.comparison.propagation.front().differing_fraction > 0);
  CHECK(sb::cli::trace_text(r).find("origin: op") != std::string::npos);
}

TEST_CASE("trace: native against canonical reductions: the origin is a reduction op at step 1") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  Config n = tiny();
  n.numerics.reduce = sb::ReduceMode::native;
  const TraceResult r = sb::cli::trace_runs(a, record(n, dir / "native.h5"), {});
  CHECK(r.step == 1);
  CHECK(r.comparison.origin_kind == "op");
  const std::vector<std::string> reductions = {"layernorm_forward", "layernorm_backward", "rmsnorm_forward",
                                               "rmsnorm_backward",  "bias_backward",      "softmax_xent_forward"};
  CHECK(std::find(reductions.begin(), reductions.end(), origin_row(r).op) != reductions.end());
  check_equal_before_origin(r);
}

TEST_CASE("trace: bf16 against fp32: the origin is the first op whose dtype path differs, and says so") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  Config h = tiny();
  h.train.precision = sb::Precision::bf16;
  const TraceResult r = sb::cli::trace_runs(a, record(h, dir / "bf16.h5"), {});
  CHECK(r.step == 1);
  CHECK(r.comparison.origin_kind == "op");
  CHECK(origin_row(r).op == "gemm");
  check_equal_before_origin(r);
  CHECK(sb::cli::trace_text(r).find("first op whose dtype path differs") != std::string::npos);
}

TEST_CASE("trace: a 1-ULP perturbation: the origin is the perturbed tensor's first reader at the perturbed step") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  Config p = tiny();
  p.perturb.tensor = "h.1.mlp.fc.w";
  p.perturb.index = 100;
  p.perturb.ulps = 1;
  p.perturb.step = 2;
  const TraceResult r = sb::cli::trace_runs(a, record(p, dir / "ulp.h5"), {});
  CHECK(r.first_divergent_step == 3);
  CHECK(r.step == 3);
  CHECK(r.comparison.origin_kind == "input");
  const sb::trace::Row& o = origin_row(r);
  CHECK(o.site == "h.1.mlp.fc matmul forward");
  CHECK(o.op == "gemm");
  CHECK(o.leaf == 0);
  CHECK(r.comparison.differing_inputs == std::vector<size_t>{1});  // the weight operand
  check_equal_before_origin(r);
}

TEST_CASE("trace: a planted one-op difference is named as exactly that op and layer") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  sb::cli::TraceOptions options;
  options.step = 1;
  // Backward calls bias_backward per leaf for h.1.mlp.proj, h.1.mlp.fc, …: call 1 is h.1.mlp.fc's.
  options.backend_b = [](const Config& c) -> std::unique_ptr<sb::Backend> {
    return std::make_unique<PlantedBackend>(sb::make_cpu_backend(sb::to_numerics(c)), 1);
  };
  const TraceResult r = sb::cli::trace_runs(a, a, options);
  CHECK(r.first_divergent_step == 0);
  CHECK(r.comparison.origin_kind == "op");
  const sb::trace::Row& o = origin_row(r);
  CHECK(o.site == "h.1.mlp.fc matmul backward");
  CHECK(o.op == "bias_backward");
  CHECK(o.leaf == 0);
  check_equal_before_origin(r);
  CHECK(!r.identical());
}

TEST_CASE("trace: 1 process against 3 simulated ranks and micro-leaves: every op equal") {
  sbt::TempDir dir;
  const auto [one, state, reference] = replay(tiny(), dir / "ref.h5", 2);
  sb::cli::ReplaySetup ranks = one;
  ranks.world = 3;
  ranks.config.run.threads = 1;
  sb::cli::ReplaySetup micro = one;
  micro.micro_leaves = 2;
  for (const auto* setup : {&ranks, &micro}) {
    const sb::cli::StreamComparison c = sb::cli::compare_streams(reference, sb::cli::replay_stream(*setup, state, 2));
    CHECK(c.identical());
    CHECK(c.rows_a == reference.size());
  }
  // Per-leaf rows keyed by global leaf: each of the 4 leaves appears, in ascending order.
  int64_t last = -1;
  for (const sb::trace::Row& row : reference)
    if (row.leaf >= 0) {
      CHECK(row.leaf >= last);
      last = row.leaf;
    }
  CHECK(last == 3);
}

TEST_CASE("trace: the optimizer's rows, and a QK-clip run on 1 process against 3 simulated ranks") {
  sbt::TempDir dir;
  Config c = tiny();
  c.optim.qk_clip = 0.001;  // below the tiny model's max logits: heads are clipped every step
  const auto [one, state, reference] = replay(c, dir / "qk.h5", 2);
  const auto has = [&](const std::string& name) {
    return std::any_of(reference.begin(), reference.end(), [&](const sb::trace::Row& r) { return r.name() == name; });
  };
  // The rows docs/TRACE.md names: Newton–Schulz per iteration, AdamW's and Muon's per tensor.
  CHECK(has("muon newton_schulz h.0.mlp.fc.w muon_momentum"));
  CHECK(has("muon newton_schulz h.0.mlp.fc.w iter 2 ns_polynomial"));
  CHECK(has("muon newton_schulz h.0.mlp.fc.w iter 2 gemm"));
  CHECK(has("adamw wte adamw"));
  CHECK(has("adamw update wte"));
  CHECK(has("muon update h.0.mlp.fc.w"));
  CHECK(has("clip sum_of_squares"));
  CHECK(has("qk_clip_scale"));
  // qk_max_keys accumulates a running max over a rank's leaves; its rows hold each call's own.
  sb::cli::ReplaySetup ranks = one;
  ranks.world = 3;
  const sb::cli::StreamComparison cmp = sb::cli::compare_streams(reference, sb::cli::replay_stream(ranks, state, 2));
  CHECK_MESSAGE(cmp.identical(), (cmp.origin ? reference[*cmp.origin].name() : std::string("(sizes)")));
}

TEST_CASE("trace: the gradient all-reduce's row: after the leaves, before the clip, the rounded gradient") {
  sbt::TempDir dir;
  const Config c = tiny();
  const std::vector<sb::trace::Row> rows = replay(c, dir / "ref.h5", 2).rows;
  const auto at = [&](const std::string& name) {
    return size_t(std::find_if(rows.begin(), rows.end(), [&](const sb::trace::Row& r) { return r.name() == name; }) -
                  rows.begin());
  };
  const size_t reduce = at("allreduce gradient");
  REQUIRE(reduce < rows.size());
  CHECK(std::count_if(rows.begin(), rows.end(), [](const sb::trace::Row& r) { return r.site == "allreduce"; }) == 1);
  for (size_t i = 0; i < reduce; ++i) REQUIRE(rows[i].leaf >= 0);  // every leaf's rows first
  const sb::trace::Row& r = rows[reduce];
  CHECK(r.leaf == -1);
  CHECK(r.inputs.empty());  // a rank's contribution depends on the world size (docs/TRACE.md)
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0] == sb::det::fingerprint(r.values.data(), r.values.size() * sizeof(uint32_t)));
  CHECK(reduce < at("clip sum_of_squares"));
  // Its output is the rounded batch gradient: each tensor's part is the gradient the untraced run
  // recorded for step 2, and the next rows are those tensors' "grad_accumulate round" rows.
  const std::vector<sb::ParamView> layout = sb::gpt_param_layout(c.model);
  const std::vector<uint64_t> recorded =
      sb::run::RunReader::open(dir / "ref.h5").series_rows<uint64_t>("series/grad_fingerprint", 1, 1);
  REQUIRE(recorded.size() == layout.size());
  REQUIRE(r.values.size() >= layout.back().offset + layout.back().numel);
  for (size_t t = 0; t < layout.size(); ++t) {
    CAPTURE(layout[t].name);
    const uint64_t part = sb::det::fingerprint(r.values.data() + layout[t].offset, layout[t].numel * sizeof(uint32_t));
    CHECK(part == recorded[t]);
    REQUIRE(reduce + 1 + t < rows.size());
    CHECK(rows[reduce + 1 + t].name() == "grad_accumulate round " + layout[t].name);
    CHECK(rows[reduce + 1 + t].outputs == std::vector<uint64_t>{part});
  }
}

TEST_CASE("trace: allreduce=native on 1 process against 2 simulated ranks: the origin is the all-reduce") {
  sbt::TempDir dir;
  Config c = tiny();
  c.numerics.allreduce = sb::AllreduceMode::native;
  const auto [one, state, reference] = replay(c, dir / "native.h5", 1);
  // One process: the float SUM is the identity, and the gradient the exact all-reduce's.
  sb::cli::ReplaySetup exact = one;
  exact.config.numerics.allreduce = sb::AllreduceMode::exact;
  CHECK(sb::cli::compare_streams(reference, sb::cli::replay_stream(exact, state, 1)).identical());
  // Two ranks: each rank's partial sum rounded, then summed in rank order.
  sb::cli::ReplaySetup two = one;
  two.world = 2;
  two.config.run.threads = 1;
  TraceResult r;
  r.a = reference;
  r.b = sb::cli::replay_stream(two, state, 1);
  r.comparison = sb::cli::compare_streams(r.a, r.b);
  CHECK(r.comparison.origin_kind == "op");
  CHECK(origin_row(r).name() == "allreduce gradient");
  check_equal_before_origin(r);
  REQUIRE(!r.comparison.propagation.empty());
  CHECK(r.comparison.propagation.front().max_ulp > 0);
}

TEST_CASE("samebits trace: exit 0 identical, 1 divergent, 2 for different experiments or an unreachable step") {
  sbt::TempDir dir;
  const std::string a = record(tiny(), dir / "ref.h5");
  Config t1 = tiny();
  t1.run.threads = 1;
  const std::string b = record(t1, dir / "t1.h5");
  Config v = tiny();
  v.numerics.gemm = sb::GemmMode::vendor;
  const std::string vendor = record(v, dir / "vendor.h5");
  Config other = tiny();
  other.train.seed = 7;
  const std::string c = record(other, dir / "other.h5");

  const auto same = sbt::run({"trace", a, b});
  CHECK_MESSAGE(same.code == 0, sbt::describe(same));
  CHECK(same.output.find("every op equal") != std::string::npos);
  const auto differ = sbt::run({"trace", a, vendor, "--out", dir / "report"});
  CHECK_MESSAGE(differ.code == 1, sbt::describe(differ));
  CHECK(sbt::read_bytes(dir / "report/report.md").size() > 0);
  const auto experiments = sbt::run({"trace", a, c});
  CHECK_MESSAGE(experiments.code == 2, sbt::describe(experiments));
  CHECK(experiments.output.find("different experiments") != std::string::npos);
  CHECK(experiments.output.find("train.seed") != std::string::npos);
  const auto unreachable = sbt::run({"trace", a, b, "--step", "9"});
  CHECK_MESSAGE(unreachable.code == 2, sbt::describe(unreachable));
  CHECK(unreachable.output.find("no reachable state for step 9") != std::string::npos);
}
