// QK-clip (optim.qk_clip) on the CUDA backend (label gpu): the per-head maxima from the device's
// qkv activations (Backend::qk_max_keys, integer atomicMax over ordered keys) and the rescaling of
// the device weights (Backend::qk_clip_scale) give the CPU's bits — every step's maxima, clipped
// count, statistics and fingerprints (trainer_parity.hpp), and the final weights and optimizer
// state (memcmp) — with and without biases, under two launch configurations; and the clip acts.
// Exits 77 (skipped) without a CUDA device.
#include <cstring>
#include <string>
#include <vector>

#include "parity/parity_support.hpp"
#include "parity/trainer_parity.hpp"

namespace sb::test {
namespace {

// Below the parity model's largest logits from the first steps on, so heads are clipped (checked).
constexpr double kTau = 0.05;

Config qk_config() {
  Config c = parity_gpt_config();
  c.train.steps = 12;
  c.optim.qk_clip = kTau;
  return c;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

void check_identical(const Config& c, const CudaLaunchConfig* launch = nullptr) {
  const auto cpu = make_trainer(c, Device::cpu);
  const auto gpu = make_trainer(c, Device::cuda, launch);
  std::vector<float> cpu_maxima, gpu_maxima;
  int clipped = 0;
  std::vector<std::string> diff;
  const std::vector<ParamView>& layout = cpu->model().params();
  while (!cpu->finished()) {
    const StepResult rc = cpu->step(), rg = gpu->step();
    const std::vector<std::string> d = step_differences(rg, rc, layout);
    diff.insert(diff.end(), d.begin(), d.end());
    cpu_maxima.insert(cpu_maxima.end(), rc.stats.qk_max_logits.begin(), rc.stats.qk_max_logits.end());
    gpu_maxima.insert(gpu_maxima.end(), rg.stats.qk_max_logits.begin(), rg.stats.qk_max_logits.end());
    clipped += rc.stats.qk_clipped;
  }
  for (const std::string& line : diff) MESSAGE(line);
  CHECK_MESSAGE(diff.empty(), diff.size(),
                " fields differ CPU vs GPU (first: ", diff.empty() ? std::string() : diff.front(), ")");
  CHECK(cpu_maxima.size() == size_t(c.train.steps * c.model.n_layer * c.model.n_head));
  CHECK(same_bits(gpu_maxima, cpu_maxima));
  CHECK(clipped > 0);  // the clip acts
  const TrainerState sc = cpu->export_state(), sg = gpu->export_state();
  CHECK(same_bits(sg.weights, sc.weights));
  REQUIRE(sg.optimizer.size() == sc.optimizer.size());
  for (size_t b = 0; b < sc.optimizer.size(); ++b)
    CHECK_MESSAGE(same_bits(sg.optimizer[b].data, sc.optimizer[b].data), sc.optimizer[b].name);
  for (const std::string& line : state_differences(sg, sc, layout)) MESSAGE(line);
}

TEST_CASE("qk_clip on the GPU: every step's maxima, the clip and the weights equal the CPU's") {
  require_gpu();
  check_identical(qk_config());
}

TEST_CASE("qk_clip on the GPU without biases, under a second launch configuration") {
  require_gpu();
  const CudaLaunchConfig launch{3, 1, 96};
  Config c = qk_config();
  c.model.bias = false;
  check_identical(c, &launch);
}

}  // namespace
}  // namespace sb::test
