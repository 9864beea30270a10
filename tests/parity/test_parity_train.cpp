// Whole training steps through the real sb::Trainer, CPU backend vs CUDA backend (everything of
// the step on the GPU: model, accumulator, clipping, Muon/AdamW update): every step's loss,
// statistics, gradient and weight fingerprints bitwise equal, for Muon in fp32, AdamW in bf16 and
// AdamW in fp16 with loss scaling, under two launch configurations; and checkpoints crossing
// backends: a CPU state resumed on the GPU (and back) continues bitwise (trainer_parity.hpp).
#include <string>
#include <vector>

#include "parity/parity_support.hpp"
#include "parity/trainer_parity.hpp"

namespace sb::test {
namespace {

Config tiny_config() {
  Config c = parity_gpt_config();
  c.train.eval_every = 10;
  c.train.eval_leaves = 2;
  c.optim.clip = 0.5;  // some steps clip, some do not
  return c;
}

void check_identical(const Config& c, int steps, const CudaLaunchConfig* launch = nullptr) {
  const auto cpu = make_trainer(c, Device::cpu);
  const auto gpu = make_trainer(c, Device::cuda, launch);
  const std::vector<std::string> diff = compare_trainers(*gpu, *cpu, steps, false);
  for (const std::string& line : diff) MESSAGE(line);
  CHECK_MESSAGE(diff.empty(), diff.size(),
                " fields differ CPU vs GPU (first: ", diff.empty() ? std::string() : diff.front(), ")");
}

TEST_CASE("20 Muon steps through the Trainer: the GPU's results equal the CPU's at every step") {
  require_gpu();
  check_identical(tiny_config(), 20);
}

TEST_CASE("Muon under a second launch configuration (tile 3, one row per block, 96 threads)") {
  require_gpu();
  const CudaLaunchConfig launch{3, 1, 96};
  Config c = tiny_config();
  c.optim.weight_decay = 0.1;
  c.optim.nesterov = false;
  c.optim.scale = MuonScale::moonlight;
  check_identical(c, 8, &launch);
}

TEST_CASE("20 AdamW steps in bf16 through the Trainer: GPU equals CPU at every step") {
  require_gpu();
  Config c = tiny_config();
  c.optim.name = OptimizerName::adamw;
  c.optim.lr = 3e-3;
  c.optim.weight_decay = 0.1;
  c.train.precision = Precision::bf16;
  check_identical(c, 20);
}

TEST_CASE("AdamW in fp16 with loss scaling: GPU equals CPU, skipped steps included") {
  require_gpu();
  Config c = tiny_config();
  c.optim.name = OptimizerName::adamw;
  c.optim.lr = 3e-3;
  c.train.precision = Precision::fp16;
  check_identical(c, 10);
}

TEST_CASE("checkpoints cross backends: CPU state resumed on the GPU, GPU state on the CPU") {
  require_gpu();
  const Config c = tiny_config();
  const auto cpu = make_trainer(c, Device::cpu);
  for (int s = 0; s < 6; ++s) cpu->step();
  const auto gpu = make_trainer(c, Device::cuda);
  gpu->import_state(cpu->export_state());
  {
    const std::vector<std::string> diff =
        state_differences(gpu->export_state(), cpu->export_state(), cpu->model().params());
    for (const std::string& line : diff) MESSAGE("after import on the GPU: ", line);
    CHECK(diff.empty());
  }
  std::vector<std::string> diff = compare_trainers(*gpu, *cpu, 6, false);
  for (const std::string& line : diff) MESSAGE("resumed on the GPU: ", line);
  CHECK(diff.empty());

  const auto cpu2 = make_trainer(c, Device::cpu);
  cpu2->import_state(gpu->export_state());
  diff = compare_trainers(*gpu, *cpu2, 4, false);
  for (const std::string& line : diff) MESSAGE("GPU state resumed on the CPU: ", line);
  CHECK(diff.empty());
}

}  // namespace
}  // namespace sb::test
