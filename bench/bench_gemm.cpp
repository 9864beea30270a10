// bench_gemm: the GEMM ratios of docs/PERFORMANCE.md, each measured side by side in one process — the two variants of a
// comparison alternate, block after block, and the figure is the median over repetitions of the
// per-repetition ratio (a burst of outside load hits both sides of one repetition alike). Times are
// process CPU time (steady on a loaded machine) and wall time. Prints one JSON object (bench/run
// turns it into bench/results.json and the table of docs/PERFORMANCE.md). Nothing here checks
// bits: the canonical GEMM's bitwise tests are tests/unit/test_gemm_shapes.cpp. The JSON names the
// OpenBLAS kernel in use (openblas_core); bench/run runs this through bench/native-blas.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/cpu/bf16_pairs_isa.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cpu/exact_isa.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/tracing_backend.hpp"
#include "samebits/core/train/trainer.hpp"

namespace {

using namespace sb;

struct Times {
  double cpu = 0, wall = 0;  // seconds per call
};

double now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs f `calls` times; seconds per call.
Times time_block(const std::function<void()>& f, int calls) {
  const double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
  for (int i = 0; i < calls; ++i) f();
  return {(now(CLOCK_PROCESS_CPUTIME_ID) - c0) / calls, (now(CLOCK_MONOTONIC) - w0) / calls};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One comparison: time(a) / time(b) (below 1: a is faster), medians over `reps` repetitions.
struct Ratio {
  std::string name, a_label, b_label;
  double cpu = 0, wall = 0;     // median of per-repetition ratios a/b
  double a_cpu = 0, b_cpu = 0;  // median seconds per call
  double a_wall = 0, b_wall = 0;
  int reps = 0, calls = 0;
};

Ratio compare(const std::string& name, const std::string& a_label, const std::function<void()>& a,
              const std::string& b_label, const std::function<void()>& b, int reps, double block_seconds) {
  a();  // warm: first touch, packing buffers, thread pools
  b();
  // Calls per block for each side (an update alone is far shorter than a step).
  const auto calls_for = [&](const std::function<void()>& f) {
    return std::max(1, static_cast<int>(block_seconds / std::max(time_block(f, 1).wall, 1e-6)));
  };
  const int calls = calls_for(a), calls_b = calls_for(b);
  std::vector<double> rc, rw, ac, bc, aw, bw;
  for (int r = 0; r < reps; ++r) {
    // Alternate which side goes first, so neither always follows the other's cache state.
    Times ta, tb;
    if (r % 2 == 0) {
      ta = time_block(a, calls);
      tb = time_block(b, calls_b);
    } else {
      tb = time_block(b, calls_b);
      ta = time_block(a, calls);
    }
    rc.push_back(ta.cpu / tb.cpu);
    rw.push_back(ta.wall / tb.wall);
    ac.push_back(ta.cpu), bc.push_back(tb.cpu), aw.push_back(ta.wall), bw.push_back(tb.wall);
  }
  Ratio out{name, a_label, b_label};
  out.cpu = median(rc), out.wall = median(rw);
  out.a_cpu = median(ac), out.b_cpu = median(bc), out.a_wall = median(aw), out.b_wall = median(bw);
  out.reps = reps, out.calls = calls;
  std::fprintf(stderr, "  %-44s cpu %.3f  wall %.3f  (%s %.3f ms, %s %.3f ms cpu)\n", name.c_str(), out.cpu, out.wall,
               a_label.c_str(), 1e3 * out.a_cpu, b_label.c_str(), 1e3 * out.b_cpu);
  return out;
}

// Operands of one GEMM shape (row-major, op(A) m×k, op(B) k×n) filled with fixed pseudo-random
// values in [-0.5, 0.5).
struct GemmCase {
  Trans ta, tb;
  int m, n, k;
  std::vector<float> a, b, c;  // (ta? k×m : m×k), (tb? n×k : k×n), (m, n)
  int lda() const { return ta == Trans::no ? k : m; }
  int ldb() const { return tb == Trans::no ? n : k; }
};

// v ← fixed pseudo-random values in [-scale/2, scale/2), continuing the generator `state`.
void fill_uniform(std::vector<float>& v, uint32_t& state, float scale) {
  for (float& x : v)
    x = scale * (static_cast<float>((state = state * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f);
}

GemmCase make_case(Trans ta, Trans tb, int m, int n, int k) {
  GemmCase g{ta, tb, m, n, k, {}, {}, {}};
  g.a.resize(static_cast<size_t>(m) * k);
  g.b.resize(static_cast<size_t>(k) * n);
  g.c.resize(static_cast<size_t>(m) * n);
  uint32_t state = 12345u;
  fill_uniform(g.a, state, 1.0f);
  fill_uniform(g.b, state, 1.0f);
  return g;
}

// The three products of linear layers (in, out) on N tokens, per layer: forward NT (N, out, in),
// input gradient NN (N, in, out), weight gradient TN (out, in, N).
std::vector<GemmCase> linear_cases(int N, std::initializer_list<std::pair<int, int>> layers) {
  std::vector<GemmCase> cases;
  for (auto [in, out] : layers) {
    cases.push_back(make_case(Trans::no, Trans::yes, N, out, in));
    cases.push_back(make_case(Trans::no, Trans::no, N, in, out));
    cases.push_back(make_case(Trans::yes, Trans::no, out, in, N));
  }
  return cases;
}

std::string shape_name(const GemmCase& g) {
  return std::string(g.ta == Trans::no ? "N" : "T") + (g.tb == Trans::no ? "N" : "T") + " " + std::to_string(g.m) +
         "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
}

// One product on a backend: canonical, or exact under an exact backend (numerics.gemm = exact).
std::function<void()> canonical(Backend& be, GemmCase& g, Precision prec = Precision::fp32) {
  return [&be, &g, prec] {
    be.gemm({g.ta, g.tb, g.m, g.n, g.k, g.a.data(), g.lda(), g.b.data(), g.ldb(), g.c.data(), g.n, false, prec});
  };
}

std::function<void()> openblas(GemmCase& g) {
  return [&g] {
    cblas_sgemm(CblasRowMajor, g.ta == Trans::no ? CblasNoTrans : CblasTrans,
                g.tb == Trans::no ? CblasNoTrans : CblasTrans, g.m, g.n, g.k, 1.0f, g.a.data(), g.lda(), g.b.data(),
                g.ldb(), 0.0f, g.c.data(), g.n);
  };
}

// One optimizer's update alone on the default model's parameters (random weights and gradient),
// on the backend the Trainer's default numerics use.
class LoneUpdate {
 public:
  LoneUpdate(OptimizerName name, Backend& be) : layout_(gpt_param_layout(GPTConfig{})) {
    size_t flat = 0;
    for (const ParamView& p : layout_) flat = std::max(flat, p.offset + p.numel);
    w_.resize(flat), g_.resize(flat);
    uint32_t state = 777u;
    fill_uniform(w_, state, 0.02f);
    fill_uniform(g_, state, 0.02f);
    OptimConfig config;
    config.name = name;
    if (name == OptimizerName::adamw) config.lr = 3e-3;
    opt_ = make_optimizer(config, layout_, be, Precision::fp32);
    ctx_.compute_stats = false;  // as in the compared steps (statistics off)
  }
  std::function<void()> call() {
    return [this] {
      opt_->step(w_.data(), g_.data(), ctx_);
      ++ctx_.step;
    };
  }

 private:
  std::vector<ParamView> layout_;
  std::vector<float> w_, g_;
  std::unique_ptr<Optimizer> opt_;
  StepContext ctx_;
};

// The default experiment (experiments/configs/default.ini: 8 leaves of 4 sequences of 128 tokens).
Config default_config() {
  Config c;
  c.data.leaf_size = 4;
  c.data.leaves = 8;
  c.train.eval_every = 0;
  return c;
}

void print_json(const std::vector<Ratio>& ratios, double muon_bytes, double adamw_bytes) {
  std::printf("{\n  \"ratios\": [\n");
  for (size_t i = 0; i < ratios.size(); ++i) {
    const Ratio& r = ratios[i];
    std::printf(
        "    {\"name\": \"%s\", \"a\": \"%s\", \"b\": \"%s\", \"cpu_ratio\": %.5f, "
        "\"wall_ratio\": %.5f, \"a_cpu_s\": %.6g, \"b_cpu_s\": %.6g, \"a_wall_s\": %.6g, "
        "\"b_wall_s\": %.6g, \"reps\": %d, \"calls_per_block\": %d}%s\n",
        r.name.c_str(), r.a_label.c_str(), r.b_label.c_str(), r.cpu, r.wall, r.a_cpu, r.b_cpu, r.a_wall, r.b_wall,
        r.reps, r.calls, i + 1 < ratios.size() ? "," : "");
  }
  const char* core = openblas_get_corename();
  std::printf("  ],\n  \"state_bytes\": {\"muon\": %.0f, \"adamw\": %.0f},\n  \"openblas_core\": \"%s\"\n}\n",
              muon_bytes, adamw_bytes, core != nullptr ? core : "unknown");
}

}  // namespace

// The exact GEMM's shapes: 1024³ and the GPT-2 124M leaf's (256 tokens): qkv forward, the MLP's
// down dX and up dW, the tied head's logits.
constexpr int kVocab124M = 50257;
std::vector<GemmCase> exact_shapes() {
  const int T = 256, C = 768;
  return {make_case(Trans::no, Trans::no, 1024, 1024, 1024), make_case(Trans::no, Trans::yes, T, 3 * C, C),
          make_case(Trans::no, Trans::no, T, C, 4 * C), make_case(Trans::yes, Trans::no, 4 * C, C, T),
          make_case(Trans::no, Trans::yes, T, kVocab124M, C)};
}

// The exact GEMM (numerics.gemm = exact) against the canonical one and OpenBLAS sgemm, on the path
// exact_gemm_isa() names: 1024³ and the GPT-2 124M leaf's shapes (256 tokens), fp32 and bf16, 1
// and 2 threads.
void exact_ratios(std::vector<Ratio>& ratios, Backend& be, bool quick, int reps) {
  const std::string isa = exact_gemm_isa();
  auto exact32 = make_cpu_backend({GemmMode::exact, ReduceMode::canonical, Precision::fp32});
  auto exact16 = make_cpu_backend({GemmMode::exact, ReduceMode::canonical, Precision::bf16});
  std::vector<GemmCase> shapes = exact_shapes();
  for (int threads : {1, 2}) {
    std::fprintf(stderr, "exact GEMM (%s), %d thread(s): exact / canonical, exact / OpenBLAS sgemm\n", isa.c_str(),
                 threads);
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    const std::string tag = " [" + isa + ", " + std::to_string(threads) + "t]";
    for (GemmCase& g : shapes) {
      const double block = g.n == kVocab124M ? 1.0 : (quick ? 0.1 : 0.3);
      ratios.push_back(compare("exact/canonical fp32 " + shape_name(g) + tag, "exact", canonical(*exact32, g),
                               "canonical", canonical(be, g), reps, block));
      ratios.push_back(compare("exact/openblas fp32 " + shape_name(g) + tag, "exact", canonical(*exact32, g),
                               "openblas", openblas(g), reps, block));
      ratios.push_back(compare("exact/canonical bf16 " + shape_name(g) + tag, "exact bf16",
                               canonical(*exact16, g, Precision::bf16), "canonical bf16",
                               canonical(be, g, Precision::bf16), reps, block));
    }
  }
}

// The exact GEMM's slice products by oneDNN's int8 matmul against samebits' own best kernel
// (SAMEBITS_ISA=onednn vs avx512, else avx2) and oneDNN's exact against the canonical GEMM: the
// exact ratios' shapes, fp32 and bf16, 1 and 2 threads.
void exact_path_ratios(std::vector<Ratio>& ratios, Backend& be, bool quick, int reps) {
  if (!exact_gemm_isa_available("onednn")) {
    std::fprintf(stderr, "exact GEMM paths: this build has no oneDNN\n");
    return;
  }
  const std::string own = exact_gemm_isa_available("avx512") ? "avx512" : "avx2";
  auto on_path = [](const std::string& isa, std::function<void()> product) {
    return [isa, product] {
      ::setenv("SAMEBITS_ISA", isa.c_str(), 1);
      product();
      ::unsetenv("SAMEBITS_ISA");
    };
  };
  std::vector<GemmCase> shapes = exact_shapes();
  for (int threads : {1, 2}) {
    std::fprintf(stderr, "exact GEMM, %d thread(s): onednn / %s, onednn / canonical\n", threads, own.c_str());
    omp_set_num_threads(threads);
    const std::string tag = " [" + std::to_string(threads) + "t]";
    for (Precision prec : {Precision::fp32, Precision::bf16}) {
      auto exact = make_cpu_backend({GemmMode::exact, ReduceMode::canonical, prec});
      const std::string p = prec == Precision::fp32 ? " fp32 " : " bf16 ";
      for (GemmCase& g : shapes) {
        const double block = g.n == kVocab124M ? 1.0 : (quick ? 0.1 : 0.3);
        ratios.push_back(compare("exact onednn/" + own + p + shape_name(g) + tag, "onednn",
                                 on_path("onednn", canonical(*exact, g, prec)), own,
                                 on_path(own, canonical(*exact, g, prec)), reps, block));
        ratios.push_back(compare("exact onednn/canonical" + p + shape_name(g) + tag, "onednn",
                                 on_path("onednn", canonical(*exact, g, prec)), "canonical", canonical(be, g, prec),
                                 reps, block));
      }
    }
  }
}

// The bf16 pair order (numerics.bf16_dot = pairs) on the path bf16_pairs_isa() names against the
// canonical bf16 chain and the canonical fp32 GEMM: the exact ratios' shapes, 1 and 2 threads.
void pairs_ratios(std::vector<Ratio>& ratios, Backend& be, bool quick, int reps) {
  const std::string isa = bf16_pairs_isa();
  auto pairs = make_cpu_backend({GemmMode::canonical, ReduceMode::canonical, Precision::bf16, Bf16Dot::pairs});
  std::vector<GemmCase> shapes = exact_shapes();
  for (int threads : {1, 2}) {
    std::fprintf(stderr, "bf16 pairs (%s), %d thread(s): pairs / chain bf16, pairs / canonical fp32\n", isa.c_str(),
                 threads);
    omp_set_num_threads(threads);
    const std::string tag = " [" + isa + ", " + std::to_string(threads) + "t]";
    for (GemmCase& g : shapes) {
      const double block = g.n == kVocab124M ? 1.0 : (quick ? 0.1 : 0.3);
      ratios.push_back(compare("pairs/chain bf16 " + shape_name(g) + tag, "pairs",
                               canonical(*pairs, g, Precision::bf16), "chain", canonical(be, g, Precision::bf16), reps,
                               block));
      ratios.push_back(compare("pairs bf16/canonical fp32 " + shape_name(g) + tag, "pairs",
                               canonical(*pairs, g, Precision::bf16), "fp32", canonical(be, g), reps, block));
    }
  }
}

// bench_gemm [--quick] [--only gemm|step|trace|exact|exact-paths|bf16-pairs]: --quick uses fewer repetitions (a
// smoke run); the exact GEMM's and the pair order's rows only with --only exact, exact-paths or bf16-pairs.
int main(int argc, char** argv) {
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") quick = true;
    else if (arg == "--only" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_gemm [--quick] [--only gemm|step|trace|exact|exact-paths|bf16-pairs]\n");
      return 2;
    }
  }
  const int reps = quick ? 3 : 7;
  std::vector<Ratio> ratios;
  double muon_bytes = 0, adamw_bytes = 0;
  auto be = make_cpu_backend(Numerics::deterministic());

  if (only.empty() || only == "gemm") {
    std::fprintf(stderr, "GEMM, 1 thread: canonical / OpenBLAS sgemm (time ratio)\n");
    omp_set_num_threads(1);
    openblas_set_num_threads(1);
    std::vector<GemmCase> square = {make_case(Trans::no, Trans::no, 512, 512, 512),
                                    make_case(Trans::no, Trans::no, 1024, 1024, 1024)};
    for (GemmCase& g : square)
      ratios.push_back(compare("sgemm " + shape_name(g), "canonical", canonical(*be, g), "openblas", openblas(g), reps,
                               quick ? 0.05 : 0.15));
    // The default model's linear layers on one leaf (N = 4 × 128 tokens): forward NT (N, OC, C),
    // input gradient NN (N, C, OC), weight gradient TN (OC, C, N); (C, OC) of qkv, attention
    // projection, MLP up, MLP down and the tied LM head.
    std::vector<GemmCase> model = linear_cases(512, {{128, 384}, {128, 128}, {128, 512}, {512, 128}, {128, 256}});
    for (GemmCase& g : model)
      ratios.push_back(compare("sgemm " + shape_name(g), "canonical", canonical(*be, g), "openblas", openblas(g), reps,
                               quick ? 0.02 : 0.06));
    // All of them in one call sequence: the model's GEMM mix (time-weighted).
    auto all = [&](bool canon) {
      return [&, canon] {
        for (GemmCase& g : model) canon ? canonical(*be, g)() : openblas(g)();
      };
    };
    ratios.push_back(compare("sgemm default-model mix (15 shapes)", "canonical", all(true), "openblas", all(false),
                             reps, quick ? 0.05 : 0.15));

    // GPT-2 124M (C = 768, V = 50257) on one leaf of 256 tokens: the tied head's three products
    // (logits NT, dX NN with k = V, dW TN with m = V) alone, and with every layer's twelve (qkv,
    // attention projection, MLP up and down; forward, input and weight gradient) in one call
    // sequence, the layers twelve times (time-weighted, as one leaf's GEMMs in a step).
    const int T = 256, C = 768, V = 50257;
    std::vector<GemmCase> head = {make_case(Trans::no, Trans::yes, T, V, C), make_case(Trans::no, Trans::no, T, C, V),
                                  make_case(Trans::yes, Trans::no, V, C, T)};
    std::vector<GemmCase> layer = linear_cases(T, {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}});
    for (GemmCase& g : head)
      ratios.push_back(compare("sgemm 124M head " + shape_name(g), "canonical", canonical(*be, g), "openblas",
                               openblas(g), reps, quick ? 0.2 : 0.5));
    auto leaf = [&](bool canon) {
      return [&, canon] {
        for (GemmCase& g : head) canon ? canonical(*be, g)() : openblas(g)();
        for (int l = 0; l < 12; ++l)
          for (GemmCase& g : layer) canon ? canonical(*be, g)() : openblas(g)();
      };
    };
    ratios.push_back(compare("sgemm 124M leaf mix (head + 12 layers x 12 shapes, 256 tokens)", "canonical", leaf(true),
                             "openblas", leaf(false), quick ? 3 : 5, 1.0));

    // Newton–Schulz's A = X·Xᵀ on the default model's widest hidden matrices (r = 128, c = 512):
    // syrk (upper triangle, mirrored) against the plain canonical gemm of the same bits.
    GemmCase gram = make_case(Trans::no, Trans::yes, 128, 128, 512);
    ratios.push_back(compare(
        "syrk / gemm NT 128x128x512", "syrk",
        [&] {
          be->syrk(sb::ops::syrk_problem(Trans::no, 128, 512, gram.a.data(), 512, gram.c.data(), 128, Precision::fp32));
        },
        "gemm", canonical(*be, gram), reps, quick ? 0.02 : 0.06));

    std::fprintf(stderr, "canonical GEMM, 1 thread / 2 threads (time ratio = the speedup of 2 threads)\n");
    for (GemmCase* g : {&square[1], &model[0]}) {
      auto threads = [&, g](int t) {
        return [&, g, t] {
          omp_set_num_threads(t);
          canonical(*be, *g)();
        };
      };
      ratios.push_back(compare("canonical threads " + shape_name(*g), "1 thread", threads(1), "2 threads", threads(2),
                               reps, quick ? 0.05 : 0.15));
    }
  }

  if (only == "exact") exact_ratios(ratios, *be, quick, reps);  // on request only: minutes
  if (only == "exact-paths") exact_path_ratios(ratios, *be, quick, reps);
  if (only == "bf16-pairs") pairs_ratios(ratios, *be, quick, reps);

  if (only.empty() || only == "step") {
    std::fprintf(stderr, "training step, default experiment (4096 tokens), 2 threads\n");
    omp_set_num_threads(2);
    openblas_set_num_threads(2);
    TrainerOptions fast;
    fast.statistics = false;
    fast.fingerprints = false;
    TrainerOptions full;  // statistics and fingerprints on: what the run file records
    Config det = default_config();
    Config vendor = default_config();
    vendor.numerics = numerics_preset(NumericsMode::vendor);
    Config adamw = default_config();
    adamw.optim.name = OptimizerName::adamw;
    adamw.optim.lr = 3e-3;
    // One step per block, alternating, and the median of many per-pair ratios: this VM's step time
    // drifts by ±20 % over seconds, which moves a ratio of longer blocks by several percent. Each
    // comparison trains two fresh Trainers from step 0, so both sides are at the same point of
    // training (the same data and the same schedule) step for step.
    const int step_reps = quick ? 7 : 41;
    const double block = 0.0;
    auto steps = [&](const std::string& name, const std::string& a_label, const Config& a_config,
                     const TrainerOptions& a_options, const std::string& b_label, const Config& b_config,
                     const TrainerOptions& b_options) {
      Trainer a(a_config, a_options), b(b_config, b_options);
      ratios.push_back(compare(
          name, a_label, [&] { a.step(); }, b_label, [&] { b.step(); }, step_reps, block));
    };
    steps("step deterministic / vendor", "deterministic", det, fast, "vendor", vendor, fast);
    steps("step muon / adamw", "muon", det, fast, "adamw", adamw, fast);
    steps("step statistics on / off", "statistics on", det, full, "statistics off", det, fast);
    // The floor of Muon / AdamW: both steps do the same forward, backward and sums; Muon's differs
    // by its update (momentum, Newton–Schulz, the step) in place of AdamW's, so it cannot be
    // cheaper than 1 + (Muon update − AdamW update) / AdamW step (bench/run reports it).
    Trainer t_adamw(adamw, fast);
    LoneUpdate muon_update(OptimizerName::muon, *be), adamw_update(OptimizerName::adamw, *be);
    ratios.push_back(compare(
        "muon update / adamw step", "muon update", muon_update.call(), "adamw step", [&] { t_adamw.step(); }, step_reps,
        block));
    ratios.push_back(compare(
        "adamw update / adamw step", "adamw update", adamw_update.call(), "adamw step", [&] { t_adamw.step(); },
        step_reps, block));
    muon_bytes = static_cast<double>(Trainer(det, fast).optimizer().state_bytes());
    adamw_bytes = static_cast<double>(t_adamw.optimizer().state_bytes());
  }
  if (only.empty() || only == "trace") {
    // Tracing (docs/TRACE.md): a --trace-steps run's untraced steps run through a detached
    // TracingBackend; its traced steps hash every op's regions.
    std::fprintf(stderr, "training step through a TracingBackend, default experiment, 2 threads\n");
    omp_set_num_threads(2);
    TrainerOptions fast;
    fast.statistics = false;
    fast.fingerprints = false;
    const Config det = default_config();
    const std::unique_ptr<Backend> cpu_a = make_cpu_backend(to_numerics(det)),
                                   cpu_b = make_cpu_backend(to_numerics(det));
    TracingBackend detached(*cpu_a), traced(*cpu_b);
    const std::unique_ptr<Communicator> comm_a = make_local_communicator(), comm_b = make_local_communicator();
    Trainer plain(det, fast), wrapped(det, detached, *comm_a, fast), tracing(det, traced, *comm_b, fast);
    const int step_reps = quick ? 5 : 21;
    ratios.push_back(compare(
        "step tracing wrapper detached / plain backend", "detached", [&] { wrapped.step(); }, "plain",
        [&] { plain.step(); }, step_reps, 0.0));
    size_t traced_rows = 0;
    const auto traced_step = [&] {
      trace::Recorder recorder;
      traced.trace(&recorder);
      tracing.step();
      traced.trace(nullptr);
      traced_rows = recorder.rows().size();
    };
    ratios.push_back(compare(
        "step traced / plain", "traced", traced_step, "plain", [&] { plain.step(); }, step_reps, 0.0));
    // The tracing code compiled in and off (every run's: the plain Trainer, no TracingBackend)
    // against a build without it (docs/TRACE.md): such a build saves only the tests of a null
    // Backend::tracer() — one per trace::Scope, each of which holds at least one row of a traced
    // step, and the trainer's fewer than 16 outside one — so a step makes at most that many.
    constexpr size_t kTrainerChecks = 16;
    const size_t checks = traced_rows + kTrainerChecks;
    const auto null_scopes = [&] {
      for (size_t i = 0; i < checks; ++i) {
        const trace::Scope site(*be, "h.", int64_t(i % 4), " attn");
      }
    };
    std::fprintf(stderr, "  (%zu null-tracer checks a step: %zu rows of a traced step + %zu)\n", checks, traced_rows,
                 kTrainerChecks);
    ratios.push_back(compare(
        "step tracer checks / plain", "null-tracer checks", null_scopes, "plain", [&] { plain.step(); }, step_reps,
        0.01));
  }
  print_json(ratios, muon_bytes, adamw_bytes);
  return 0;
}
