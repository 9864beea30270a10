// parity_train: trains a config (default: experiments/configs/default.ini) for N steps with the
// real Trainer on the CPU backend and, side by side, on the CUDA backend (run.backend=cuda: the
// model, the accumulator, clipping and the optimizer update on the GPU), and compares every step:
// loss, every statistic, per-tensor gradient and weight fingerprints (trainer_parity.hpp). Prints
// one line per step, every difference (with the first differing element of each tensor at the
// first differing step), and exits 0 only when everything is identical (1 on a difference, 2 on
// an error, 77 without a GPU).
//   parity_train [CONFIG.ini] [--steps N] [--key value ...]   (keys as for samebits train)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "parity/trainer_parity.hpp"
#include "samebits/cli/options.hpp"
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
    config.train.steps = std::max<int64_t>(config.train.steps, steps);
    std::printf("parity_train: %s, %d steps, CPU Trainer vs CUDA Trainer\n", ini.c_str(), steps);
    const auto cpu = sb::test::make_trainer(config, sb::Device::cpu);
    const auto gpu = sb::test::make_trainer(config, sb::Device::cuda);
    std::printf("parity_train: cpu: %s\nparity_train: gpu: %s\n", cpu->backend().describe().c_str(),
                gpu->backend().describe().c_str());
    const std::vector<std::string> diff = sb::test::compare_trainers(*gpu, *cpu, steps, true);
    for (const std::string& line : diff) std::printf("parity_train: DIFF %s\n", line.c_str());
    std::printf("parity_train: %s after %d steps (%zu differing fields)\n", diff.empty() ? "IDENTICAL" : "DIFFERENT",
                steps, diff.size());
    return diff.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parity_train: error: %s\n", e.what());
    return 2;
  }
}
