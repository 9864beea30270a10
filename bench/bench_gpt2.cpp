// GPT-2 scale on the host (docs/PERFORMANCE.md, GPT-2 scale): where start-up goes (data, model buffers, initialisation,
// optimizer state, accumulator), the first and second training step, tokens/s, and Newton–Schulz's
// share of the step with the tokens per step at which it falls under 5 %. A plain program (no
// Google Benchmark: one step of GPT-2 small takes tens of seconds on two cores). It also checks
// that initialisation on 1 thread and on all threads gives the same bits. Measurements only: no
// figure here is part of an experiment. Usage (docs/PERFORMANCE.md §GPT-2):
//   bench_gpt2 [CONFIG.ini] [--key value ...]      default: experiments/configs/gpt2_124m.ini
// A config with data.source=shards gets generated shards (GPT-2 token ids) unless --data.path is
// given. OMP_NUM_THREADS or --run.threads sets the threads of the steps.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "samebits/cli/options.hpp"
#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/optim/ns_coefficients.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/philox.hpp"

namespace fs = std::filesystem;
using namespace sb;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Wall and process-CPU seconds of f().
template <class F>
std::pair<double, double> timed(F&& f) {
  const double w = now(), c = cpu_now();
  f();
  return {now() - w, cpu_now() - c};
}

void report(const char* what, std::pair<double, double> t) {
  std::printf("  %-44s %8.3f s wall %8.3f s CPU\n", what, t.first, t.second);
}

// Shards of synthetic-language tokens at the config's vocabulary, enough for `tokens` tokens.
void write_shards(const fs::path& dir, const Config& c, uint64_t tokens) {
  fs::create_directories(dir);
  const int version = c.model.vocab <= 65536 ? 1 : 2;
  const data::Split splits[2] = {data::Split::train, data::Split::validation};
  const char* names[2] = {"train_000000.bin", "val_000000.bin"};
  for (int s = 0; s < 2; ++s) {
    const data::SyntheticLanguage language(data::SyntheticConfig{}, int(c.model.vocab), 7, splits[s]);
    std::vector<int32_t> buf(tokens);
    language.read(0, tokens, buf.data());
    data::ShardWriter writer((dir / names[s]).string(), version);
    writer.append(buf.data(), tokens);
    writer.finish();
  }
}

// Newton–Schulz over every hidden matrix of the model once (what one Muon step does), seconds.
std::pair<double, double> newton_schulz_time(const Config& c, Backend& be, double* flops) {
  NewtonSchulz ns(be, c.train.precision);
  const std::vector<NsStep> steps = ns_schedule(c.optim);
  *flops = 0;
  std::vector<std::pair<int, int>> shapes;
  for (const ParamView& p : gpt_param_layout(c.model)) {
    if (p.kind == ParamKind::matrix) shapes.push_back({int(p.shape[0]), int(p.shape[1])});
  }
  size_t biggest = 0;
  for (auto [r, k] : shapes) biggest = std::max(biggest, size_t(r) * size_t(k));
  Tensor u = be.alloc(DType::f32, {int64_t(biggest)});
  Tensor out = be.alloc(DType::f32, {int64_t(biggest)});
  std::vector<float> host(biggest);
  for (size_t i = 0; i < biggest; ++i) host[i] = 0.02f * det::philox_normal(3, 11, i);
  be.copy_from_host(u.data(), host.data(), biggest * sizeof(float));
  ns.run(u.data_as<float>(), out.data_as<float>(), shapes[0].first, shapes[0].second, steps,
         c.optim.ns_eps);  // first touch of the scratch
  return timed([&] {
    for (auto [r, k] : shapes) {
      ns.run(u.data_as<float>(), out.data_as<float>(), r, k, steps, c.optim.ns_eps);
      *flops += newton_schulz_flops(r, k, int64_t(steps.size()));
    }
  });
}

}  // namespace

int main(int argc, char** argv) try {
  std::string ini = "experiments/configs/gpt2_124m.ini";
  std::vector<std::string> overrides;
  int first = 1;
  if (argc > 1 && std::strncmp(argv[1], "--", 2) != 0) ini = argv[first++];
  for (int i = first; i < argc; ++i) overrides.push_back(argv[i]);
  bool has_path = false;
  for (const std::string& o : overrides) has_path = has_path || o.rfind("--data.path", 0) == 0;

  Config c = cli::parse_config(ini, overrides);
  const fs::path dir = fs::temp_directory_path() / ("samebits_bench_gpt2_" + std::to_string(::getpid()));
  const uint64_t tokens_per_step = uint64_t(c.data.leaves * c.data.leaf_size * c.model.seq_len);
  if (c.data.source == DataSource::shards && !has_path) {
    write_shards(dir, c, 4 * tokens_per_step + uint64_t(c.model.seq_len) + 1);
    c.data.path = (dir / "train_*.bin").string();
    c.data.val_path = (dir / "val_*.bin").string();
  }
  c.train.eval_every = 0;
  const int threads = c.run.threads > 0 ? int(c.run.threads) : omp_get_max_threads();
  omp_set_num_threads(threads);

  size_t params = 0;
  for (const ParamView& p : gpt_param_layout(c.model)) params += p.numel;
  std::printf("bench_gpt2: %s, %zu parameters, %lld x %lld x %lld = %llu tokens a step, %d threads\n", ini.c_str(),
              params, (long long)c.data.leaves, (long long)c.data.leaf_size, (long long)c.model.seq_len,
              (unsigned long long)tokens_per_step, threads);

  std::unique_ptr<Trainer> trainer;
  TrainerOptions options;
  const auto built = timed([&] { trainer = std::make_unique<Trainer>(c, options); });
  std::printf("training (statistics and fingerprints on, as samebits train):\n");
  report("Trainer construction (launch to the first step)", built);
  const auto step1 = timed([&] { trainer->step(); });
  report("step 1 (first touch of the buffers)", step1);
  const auto step2 = timed([&] { trainer->step(); });
  report("step 2", step2);
  std::printf("  tokens/s (step 2): %.1f wall, %.1f per CPU-second\n", double(tokens_per_step) / step2.first,
              double(tokens_per_step) / step2.second);
  trainer.reset();

  // Start-up, piece by piece, in the order Trainer::build does it (each in its own objects).
  std::printf("start-up pieces:\n");
  {
    auto be = make_cpu_backend(to_numerics(c));
    std::unique_ptr<data::TokenSource> src;
    report("open data source",
           timed([&] { src = data::open_source(to_data_config(c), data::Split::train, io::isolated_hdf5_decoder()); }));
    std::unique_ptr<GPT> model;
    report("model buffers (weights, gradients, activations)",
           timed([&] { model = std::make_unique<GPT>(c.model, int(c.data.leaf_size), *be); }));
    std::vector<float> one_thread(model->flat_size());
    omp_set_num_threads(1);
    report("initialisation, 1 thread", timed([&] { model->init(c.train.seed); }));
    std::memcpy(one_thread.data(), model->weights().data(), one_thread.size() * sizeof(float));
    omp_set_num_threads(threads);
    report("initialisation, all threads", timed([&] { model->init(c.train.seed); }));
    const bool same = std::memcmp(one_thread.data(), model->weights().data(), one_thread.size() * sizeof(float)) == 0;
    std::printf("  initialisation on 1 and %d threads: %s\n", threads, same ? "same bits" : "DIFFERENT BITS");
    if (!same) return 1;
    std::unique_ptr<Optimizer> opt;
    report("optimizer state", timed([&] { opt = make_optimizer(c.optim, model->params(), *be, c.train.precision); }));
    std::unique_ptr<GradAccumulator> acc;
    report("fixed-point accumulator", timed([&] { acc = be->make_accumulator(model->flat_size()); }));
  }

  auto be = make_cpu_backend(to_numerics(c));
  double flops = 0;
  const auto ns = newton_schulz_time(c, *be, &flops);
  report("Newton-Schulz of every hidden matrix", ns);
  std::printf("  Newton-Schulz: %.3g flop, %.1f GFLOP/s wall\n", flops, flops / ns.first * 1e-9);
  // NS is fixed per step; the rest of step 2 is counted as per-token work (this slightly
  // overstates it: the elementwise optimizer and the accumulator rounding are also fixed). In
  // wall time and in process CPU time (the steadier figure on a shared machine).
  const char* clocks[2] = {"wall", "CPU"};
  const double ns_s[2] = {ns.first, ns.second}, step_s[2] = {step2.first, step2.second};
  for (int k = 0; k < 2; ++k) {
    const double per_token = (step_s[k] - ns_s[k]) / double(tokens_per_step);
    const double tokens_5pct = 19.0 * ns_s[k] / per_token;  // NS/(NS + t·per_token) = 0.05
    std::printf(
        "  Newton-Schulz share of step 2 (%s): %.1f %%; per-token rest %.3f ms; under 5 %% from "
        "%.0f tokens a step (%.0f sequences of %lld)\n",
        clocks[k], 100.0 * ns_s[k] / step_s[k], per_token * 1e3, tokens_5pct, tokens_5pct / double(c.model.seq_len),
        (long long)c.model.seq_len);
  }
  fs::remove_all(dir);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gpt2: %s\n", e.what());
  return 2;
}
