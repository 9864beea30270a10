// parity_train: trains a config (default: experiments/configs/default.ini) for N steps on the CPU
// backend and on the CUDA backend (hybrid_train.hpp: model and accumulation on the backend, update
// on the host) and compares the loss, gradient and weight fingerprints of every step; then checks
// the CPU run against the CPU Trainer's fingerprints. Prints one line per step and exits 0 only
// when everything is identical (1 on a difference, 2 on an error, 77 without a GPU).
//   parity_train [CONFIG.ini] [--steps N] [--key value ...]   (keys as for samebits train)
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "parity/hybrid_train.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/fingerprint.hpp"
#include "support/gpu.hpp"

int main(int argc, char** argv) {
  try {
    std::string ini = "experiments/configs/default.ini";
    int steps = 50;
    std::vector<std::string> overrides;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--steps" && i + 1 < argc) {
        steps = std::stoi(argv[++i]);
      } else if (a.rfind("--", 0) == 0) {
        overrides.push_back(a);
        if (a.find('=') == std::string::npos && i + 1 < argc) overrides.push_back(argv[++i]);
      } else {
        ini = a;
      }
    }
    sb::test::require_gpu();
    sb::Config config = sb::cli::parse_config(ini, overrides);
    config.train.eval_every = 0;
    config.train.steps = std::max<int64_t>(config.train.steps, steps);
    std::printf("parity_train: %s, %d steps\n", ini.c_str(), steps);

    auto cpu = sb::make_cpu_backend();
    const std::vector<sb::test::StepBits> on_cpu = sb::test::hybrid_train(config, *cpu, steps);
    auto gpu = sb::make_cuda_backend();
    std::printf("gpu: %s\n", gpu->describe().c_str());
    const std::vector<sb::test::StepBits> on_gpu = sb::test::hybrid_train(config, *gpu, steps);
    sb::TrainerOptions options;
    options.statistics = false;
    sb::Trainer trainer(config, options);

    int gpu_diffs = 0, trainer_diffs = 0;
    std::printf("%5s  %-8s  %-16s  %-16s  %-3s  %s\n", "step", "loss", "weights (cpu)", "weights (gpu)",
                "gpu", "trainer");
    for (int s = 0; s < steps; ++s) {
      const sb::test::StepBits& c = on_cpu[static_cast<size_t>(s)];
      const sb::test::StepBits& g = on_gpu[static_cast<size_t>(s)];
      const sb::StepResult r = trainer.step();
      const bool gpu_same = c == g;
      const bool trainer_same = r.param_fingerprints == c.param_prints &&
                                sb::det::bits_of(r.stats.loss) == c.loss;
      gpu_diffs += gpu_same ? 0 : 1;
      trainer_diffs += trainer_same ? 0 : 1;
      std::printf("%5d  %-8.5f  %-16s  %-16s  %-3s  %s\n", s + 1,
                  static_cast<double>(sb::det::float_of_bits(c.loss)),
                  sb::det::fingerprint_hex(c.weights).c_str(), sb::det::fingerprint_hex(g.weights).c_str(),
                  gpu_same ? "=" : "DIFF", trainer_same ? "=" : "DIFF");
    }
    std::printf("parity_train: %d of %d steps differ CPU vs GPU; %d differ from the CPU Trainer\n",
                gpu_diffs, steps, trainer_diffs);
    return gpu_diffs == 0 && trainer_diffs == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parity_train: %s\n", e.what());
    return 2;
  }
}
