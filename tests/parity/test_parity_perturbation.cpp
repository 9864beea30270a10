// [perturb] on the CUDA backend (label gpu): the element is moved by a 4-byte copy from and to
// device memory, so a perturbed run on the GPU records the CPU's bits at every step (loss and
// every tensor's parameter and gradient fingerprints), and differs from the unperturbed GPU run
// from step s + 1 on. Exits 77 (skipped) without a CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/gpu.hpp"
#include "support/train_bits.hpp"

namespace {

sb::Config tiny_config() {
  sb::Config c = sb::test::tiny_gpt_config(
      {.n_layer = 1, .steps = 8, .eval_every = 4, .eval_leaves = 2, .doc_len = std::nullopt, .threads = 2});
  c.perturb = {"h.0.attn.qkv.w", 17, 1, 5};
  return c;
}

// Every step's loss bits and parameter and gradient fingerprints.
std::vector<uint64_t> record(sb::Trainer& t) {
  std::vector<uint64_t> out;
  while (!t.finished()) {
    const sb::StepResult r = t.step();
    uint32_t loss;
    std::memcpy(&loss, &r.stats.loss, sizeof loss);
    out.push_back(loss);
    out.insert(out.end(), r.param_fingerprints.begin(), r.param_fingerprints.end());
    out.insert(out.end(), r.grad_fingerprints.begin(), r.grad_fingerprints.end());
  }
  return out;
}

std::vector<uint64_t> on_gpu(const sb::Config& c) {
  const std::unique_ptr<sb::Backend> be = sb::make_cuda_backend(sb::to_numerics(c));
  const std::unique_ptr<sb::Communicator> comm = sb::make_local_communicator();
  sb::Trainer t(c, *be, *comm);
  return record(t);
}

}  // namespace

TEST_CASE("a perturbed run on the GPU has the CPU's bits, and differs from the unperturbed from step 6") {
  sb::test::require_gpu();
  const sb::Config c = tiny_config();
  sb::Trainer cpu(c);
  const std::vector<uint64_t> expected = record(cpu);
  const std::vector<uint64_t> gpu = on_gpu(c);
  CHECK(gpu == expected);

  sb::Config plain = c;
  plain.perturb = {};
  const std::vector<uint64_t> unperturbed = on_gpu(plain);
  const size_t row = expected.size() / 8;  // loss + 2 × tensors per step
  CHECK(std::equal(gpu.begin(), gpu.begin() + 5 * row, unperturbed.begin()));
  CHECK_FALSE(std::equal(gpu.begin() + 5 * row, gpu.begin() + 6 * row, unperturbed.begin() + 5 * row));
}
