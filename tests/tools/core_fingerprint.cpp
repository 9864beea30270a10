// core_fingerprint: prints the fingerprints (hex) of a fixed tiny GPT's batch loss and of every
// gradient tensor, for several model variants and precisions, plus a GEMM crossing k-blocks.
// Two builds print the same text exactly when they compute the same bits: the build-invariance
// test compares the -O0 scalar build's output with the -O3 SIMD build's (tests/determinism).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/fingerprint.hpp"

namespace {

using namespace sb;

std::string hex_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", u);
  return buf;
}

void model_case(const char* name, NormKind norm, bool tied, bool bias, Precision precision) {
  GPTConfig cfg;
  cfg.vocab = 64, cfg.seq_len = 24, cfg.n_layer = 2, cfg.n_head = 4, cfg.n_embd = 48;
  cfg.norm = norm, cfg.tied_head = tied, cfg.bias = bias;
  auto be = make_cpu_backend(Numerics::deterministic(precision));
  GPT model(cfg, 2, *be);
  model.init(2024);
  std::vector<std::vector<int32_t>> data(3, std::vector<int32_t>(2 * (cfg.seq_len + 1)));
  uint32_t x = 7;
  for (auto& leaf : data)
    for (int32_t& t : leaf) t = static_cast<int32_t>((x = x * 1664525u + 1013904223u) >> 26);
  std::vector<const int32_t*> leaves;
  for (auto& leaf : data) leaves.push_back(leaf.data());
  auto acc = be->make_accumulator(model.flat_size());
  std::vector<float> grad(model.flat_size());
  const float loss = batch_gradient(model, leaves, *acc, grad.data());
  std::printf("%s loss %s (%.9g)\n", name, hex_bits(loss).c_str(), loss);
  for (const ParamView& p : model.params())
    std::printf("%s grad %-16s %s\n", name, p.name.c_str(),
                det::fingerprint_hex(det::fingerprint(grad.data() + p.offset, p.numel)).c_str());
}

void gemm_case() {
  const int m = 37, n = 53, k = 600;  // k spans three of the kernel's k-blocks
  std::vector<float> a(static_cast<size_t>(k) * m), b(static_cast<size_t>(n) * k), c(static_cast<size_t>(m) * n);
  uint32_t x = 99;
  for (float& v : a) v = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  for (float& v : b) v = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  auto be = make_cpu_backend();
  be->gemm({Trans::yes, Trans::yes, m, n, k, a.data(), m, b.data(), k, c.data(), n, false, Precision::fp32});
  std::printf("gemm 37x53x600 %s\n", det::fingerprint_hex(det::fingerprint(c.data(), c.size())).c_str());
}

}  // namespace

int main() {
  try {
    gemm_case();
    model_case("layernorm-tied-bias-fp32", NormKind::layernorm, true, true, Precision::fp32);
    model_case("rmsnorm-untied-nobias-fp32", NormKind::rmsnorm, false, false, Precision::fp32);
    model_case("layernorm-untied-bias-bf16", NormKind::layernorm, false, true, Precision::bf16);
    model_case("rmsnorm-tied-bias-fp16", NormKind::rmsnorm, true, true, Precision::fp16);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_fingerprint: %s\n", e.what());
    return 1;
  }
  return 0;
}
