// Parity of the whole model: a tiny GPT's forward and backward on the CUDA backend equal the CPU
// backend's bit for bit (loss, per-token losses, every gradient) for LayerNorm/RMSNorm, tied and
// untied heads, with and without biases, fp32/bf16/fp16 GEMM operands and several launch
// configurations; a batch of leaves through the exact accumulator. (Whole training steps through
// the Trainer: test_parity_train.cpp.)
#include <cmath>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/train/trainer.hpp"

namespace sb::test {
namespace {

Config tiny_config() { return parity_gpt_config(); }

// Leaf `l` of step 0 of the tiny config's data: (leaf_size, seq_len + 1) tokens.
std::vector<int32_t> leaf_tokens(const Config& c, int l) {
  const auto source = data::open_source(to_data_config(c), data::Split::train, io::isolated_hdf5_decoder());
  const data::Sampler sampler(*source, c.model.seq_len, static_cast<int>(c.data.leaf_size),
                              static_cast<int>(c.data.leaves), c.data.seed);
  std::vector<int32_t> t(static_cast<size_t>(c.data.leaf_size) * (c.model.seq_len + 1));
  sampler.leaf(0, l, t.data());
  return t;
}

std::vector<float> host_copy(Backend& be, const Tensor& t) {
  std::vector<float> h(static_cast<size_t>(t.numel()));
  be.copy_to_host(h.data(), t.data(), t.bytes());
  return h;
}

struct Variant {
  NormKind norm;
  bool tied, bias;
  Precision precision;
};

TEST_CASE("GPT forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  const Variant variants[] = {{NormKind::layernorm, true, true, Precision::fp32},
                              {NormKind::rmsnorm, false, false, Precision::fp32},
                              {NormKind::layernorm, false, true, Precision::bf16},
                              {NormKind::rmsnorm, true, true, Precision::fp16}};
  const std::vector<CudaLaunchConfig> launches = {{-1, 4, 256}, {3, 1, 32}, {0, 7, 96}};
  for (const Variant& v : variants) {
    Config c = tiny_config();
    c.model.norm = v.norm;
    c.model.tied_head = v.tied;
    c.model.bias = v.bias;
    const std::vector<int32_t> tokens = leaf_tokens(c, 1);
    const float scale = v.precision == Precision::fp16 ? 1024.0f : 1.0f;
    auto cpu = make_cpu_backend(Numerics::deterministic(v.precision));
    GPT cm(c.model, static_cast<int>(c.data.leaf_size), *cpu);
    cm.init(c.train.seed);
    const float closs = cm.forward(tokens.data());
    cm.backward(scale);
    const std::vector<float> cgrad = host_copy(*cpu, cm.grads());
    for (const CudaLaunchConfig& launch : launches) {
      auto gpu = make_parity_gpu(Numerics::deterministic(v.precision), launch);
      GPT gm(c.model, static_cast<int>(c.data.leaf_size), *gpu);
      gm.init(c.train.seed);
      const float gloss = gm.forward(tokens.data());
      gm.backward(scale);
      const std::string what =
          detail::concat(v.norm == NormKind::layernorm ? "layernorm" : "rmsnorm", v.tied ? " tied" : " untied",
                         v.bias ? " bias " : " ", to_string(v.precision), " on ", gpu->describe());
      CHECK_MESSAGE(det::bits_of(gloss) == det::bits_of(closs), "loss: ", what);
      CHECK_MESSAGE(same_bits(gm.token_losses(), cm.token_losses(), "token losses " + what), what);
      const std::vector<float> ggrad = host_copy(*gpu, gm.grads());
      for (const ParamView& p : cm.params()) {
        const std::vector<float> a(ggrad.begin() + p.offset, ggrad.begin() + p.offset + p.numel);
        const std::vector<float> b(cgrad.begin() + p.offset, cgrad.begin() + p.offset + p.numel);
        CHECK_MESSAGE(same_bits(a, b, "gradient of " + p.name + " " + what), p.name, " ", what);
      }
      CHECK(same_bits(ggrad, cgrad, "flat gradient (padding included) " + what));
    }
  }
}

TEST_CASE("a batch of leaves through the exact accumulator: CUDA equals the CPU bitwise") {
  require_gpu();
  const Config c = tiny_config();
  std::vector<std::vector<int32_t>> data;
  for (int l = 0; l < 3; ++l) data.push_back(leaf_tokens(c, l));
  const std::vector<const int32_t*> leaves = {data[0].data(), data[1].data(), data[2].data()};
  auto cpu = make_cpu_backend();
  auto gpu = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  GPT cm(c.model, static_cast<int>(c.data.leaf_size), *cpu), gm(c.model, static_cast<int>(c.data.leaf_size), *gpu);
  cm.init(7);
  gm.init(7);
  auto cacc = cpu->make_accumulator(cm.flat_size());
  auto gacc = gpu->make_accumulator(gm.flat_size());
  std::vector<float> cgrad(cm.flat_size());
  Guarded ggrad(*gpu, gm.flat_size());
  const float closs = batch_gradient(cm, leaves, *cacc, cgrad.data());
  const float gloss = batch_gradient(gm, leaves, *gacc, ggrad.data());
  CHECK(det::bits_of(gloss) == det::bits_of(closs));
  check_output(ggrad, cgrad, "batch gradient of 3 leaves");
  // The exact sums: the block ranges and wire words of both accumulators, bitwise.
  std::vector<uint8_t> granges(gacc->range_bytes());
  gpu->copy_to_host(granges.data(), gacc->block_ranges(), granges.size());
  CHECK(granges == std::vector<uint8_t>(cacc->block_ranges(), cacc->block_ranges() + cacc->range_bytes()));
  size_t gwords = 0, cwords = 0;
  const uint64_t* gw = gacc->encode(3, &gwords);
  const uint64_t* cw = cacc->encode(3, &cwords);
  REQUIRE(gwords == cwords);
  std::vector<uint64_t> ghost(gwords);
  gpu->copy_to_host(ghost.data(), gw, gwords * sizeof(uint64_t));
  CHECK(ghost == std::vector<uint64_t>(cw, cw + cwords));
}

TEST_CASE("vendor numerics on the GPU (cuBLAS, float atomics) run and stay close to canonical") {
  require_gpu();
  const Config c = tiny_config();
  const std::vector<int32_t> tokens = leaf_tokens(c, 0);
  auto canonical = make_parity_gpu(Numerics::deterministic(), CudaLaunchConfig{});
  auto vendor = make_parity_gpu(Numerics::vendor(), CudaLaunchConfig{});
  GPT a(c.model, static_cast<int>(c.data.leaf_size), *canonical),
      b(c.model, static_cast<int>(c.data.leaf_size), *vendor);
  a.init(3);
  b.init(3);
  const float la = a.forward(tokens.data()), lb = b.forward(tokens.data());
  a.backward();
  b.backward();
  CHECK(std::fabs(la - lb) <= 1e-5f * std::fabs(la));
  const std::vector<float> ga = host_copy(*canonical, a.grads()), gb = host_copy(*vendor, b.grads());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ga.size(); ++i) {
    diff += (static_cast<double>(ga[i]) - gb[i]) * (static_cast<double>(ga[i]) - gb[i]);
    norm += static_cast<double>(ga[i]) * ga[i];
  }
  MESSAGE("vendor vs canonical gradient: relative L2 difference ", std::sqrt(diff / norm));
  CHECK(std::sqrt(diff / norm) <= 1e-4);
}

}  // namespace
}  // namespace sb::test
