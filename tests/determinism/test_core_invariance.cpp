// Invariance matrix of the CPU training core, bitwise (memcmp): the batch loss and every gradient
// bit for OpenMP thread counts 1, 2, 3, 4; for leaves in any order; for any split of the leaves
// over calls and over (simulated) ranks whose accumulators are summed like an int64 all-reduce.
// And the counterpart: gemm=vendor (OpenBLAS, 2 threads) really gives other bits.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"

using namespace sb;

namespace {

struct Result {
  float loss = 0;
  std::vector<float> grad;
  bool operator==(const Result& o) const {
    return std::memcmp(&loss, &o.loss, sizeof loss) == 0 && grad.size() == o.grad.size() &&
           std::memcmp(grad.data(), o.grad.data(), grad.size() * sizeof(float)) == 0;
  }
};

GPTConfig small_config(NormKind norm, bool tied, bool bias, MlpKind mlp = MlpKind::gelu, PosKind pos = PosKind::learned,
                       int n_kv_head = 0, bool qk_norm = false) {
  GPTConfig cfg;
  cfg.vocab = 64, cfg.seq_len = 32, cfg.n_layer = 2, cfg.n_head = 4, cfg.n_embd = 64;
  cfg.norm = norm, cfg.tied_head = tied, cfg.bias = bias, cfg.mlp = mlp, cfg.pos = pos;
  cfg.n_kv_head = n_kv_head, cfg.qk_norm = qk_norm;
  if (mlp == MlpKind::swiglu) cfg.ffn_dim = 176;  // Llama's ⌈8C/3⌉ rounded up to 16
  return cfg;
}

constexpr int kLeafSize = 2;
constexpr int kLeaves = 4;

std::vector<std::vector<int32_t>> make_leaves(const GPTConfig& cfg) {
  std::vector<std::vector<int32_t>> data(kLeaves);
  uint64_t x = 88172645463325252ull;
  for (auto& leaf : data) {
    leaf.resize(static_cast<size_t>(kLeafSize) * (cfg.seq_len + 1));
    for (int32_t& t : leaf) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      t = static_cast<int32_t>(x % static_cast<uint64_t>(cfg.vocab));
    }
  }
  return data;
}

// The batch over the leaves in `order`, on one process.
Result run_batch(Backend& be, GPT& model, const std::vector<std::vector<int32_t>>& data,
                 const std::vector<int>& order) {
  std::vector<const int32_t*> leaves;
  for (int i : order) leaves.push_back(data[static_cast<size_t>(i)].data());
  auto acc = be.make_accumulator(model.flat_size());
  Result r;
  r.grad.resize(model.flat_size());
  r.loss = batch_gradient(model, leaves, *acc, r.grad.data());
  return r;
}

}  // namespace

TEST_CASE("loss and gradients are identical for 1, 2, 3 and 4 threads") {
  const int saved = omp_get_max_threads();
  struct Variant {
    NormKind norm;
    bool tied, bias;
    Precision precision;
    MlpKind mlp = MlpKind::gelu;
    PosKind pos = PosKind::learned;
    int n_kv_head = 0;
    bool qk_norm = false;
  };
  for (Variant v : {Variant{NormKind::layernorm, true, true, Precision::fp32},
                    Variant{NormKind::rmsnorm, false, false, Precision::fp32},
                    Variant{NormKind::layernorm, false, true, Precision::bf16},
                    Variant{NormKind::rmsnorm, false, false, Precision::fp32, MlpKind::swiglu},
                    Variant{NormKind::rmsnorm, true, false, Precision::bf16, MlpKind::swiglu},
                    Variant{NormKind::rmsnorm, false, false, Precision::fp32, MlpKind::swiglu, PosKind::rope},
                    Variant{NormKind::rmsnorm, true, false, Precision::fp32, MlpKind::swiglu, PosKind::rope, 2, true},
                    Variant{NormKind::rmsnorm, false, false, Precision::bf16, MlpKind::swiglu, PosKind::rope, 1}}) {
    const GPTConfig cfg = small_config(v.norm, v.tied, v.bias, v.mlp, v.pos, v.n_kv_head, v.qk_norm);
    auto be = make_cpu_backend(Numerics::deterministic(v.precision));
    GPT model(cfg, kLeafSize, *be);
    model.init(42);
    const auto data = make_leaves(cfg);
    Result first;
    for (int threads : {1, 2, 3, 4}) {
      omp_set_num_threads(threads);
      const Result r = run_batch(*be, model, data, {0, 1, 2, 3});
      if (threads == 1) first = r;
      CAPTURE(threads);
      CAPTURE(to_string(v.precision));
      CHECK(r == first);
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("leaves in any order, and any split over calls or ranks, give the same bits") {
  const GPTConfig cfg = small_config(NormKind::layernorm, true, true);
  auto be = make_cpu_backend();
  GPT model(cfg, kLeafSize, *be);
  model.init(7);
  const auto data = make_leaves(cfg);
  const Result ref = run_batch(*be, model, data, {0, 1, 2, 3});
  for (const std::vector<int>& order : {std::vector<int>{3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}}) {
    CAPTURE(order[0]);
    CHECK(run_batch(*be, model, data, order) == ref);
  }

  // Two "ranks": leaves {3, 1} and {0, 2} in separate accumulators, through the exact all-reduce's
  // wire (ranges MAX-reduced, words summed as the uint64 SUM all-reduce does), then rounded once.
  auto a = be->make_accumulator(model.flat_size());
  auto b = be->make_accumulator(model.flat_size());
  det::ExactSum loss_a, loss_b;
  const int32_t* rank0[] = {data[3].data(), data[1].data()};
  const int32_t* rank1[] = {data[0].data(), data[2].data()};
  accumulate_leaves(model, rank0, *a, loss_a);
  accumulate_leaves(model, rank1, *b, loss_b);
  const uint64_t adds = a->adds() + b->adds();
  const uint32_t status = a->status() | b->status();
  for (size_t i = 0; i < a->range_bytes(); ++i) {
    a->block_ranges()[i] = std::max(a->block_ranges()[i], b->block_ranges()[i]);
    b->block_ranges()[i] = a->block_ranges()[i];
  }
  size_t words_a = 0, words_b = 0;
  uint64_t* wa = a->encode(adds, &words_a);
  const uint64_t* wb = b->encode(adds, &words_b);
  REQUIRE(words_a == words_b);
  for (size_t i = 0; i < words_a; ++i) wa[i] += wb[i];
  a->decode(adds, status);
  loss_a.merge(loss_b);
  Result split;
  split.grad.resize(model.flat_size());
  a->round(split.grad.data(), static_cast<float>(kLeaves));
  split.loss = mean_loss(loss_a, kLeaves * model.leaf_tokens());
  CHECK(split == ref);
}

TEST_CASE("gemm=vendor with 2 threads gives other bits than the canonical GEMM") {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  // k spans several of OpenBLAS's k-blocks, whose partial sums it adds: not the canonical chain.
  const int m = 64, n = 64, k = 2048;
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
  uint32_t x = 12345;
  for (float& v : a) v = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  for (float& v : b) v = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  std::vector<float> canon(static_cast<size_t>(m) * n), vendor(canon.size());
  auto be_c = make_cpu_backend();
  auto be_v = make_cpu_backend({GemmMode::vendor, ReduceMode::canonical, Precision::fp32});
  be_c->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, canon.data(), n, false, Precision::fp32});
  be_v->gemm({Trans::no, Trans::no, m, n, k, a.data(), k, b.data(), n, vendor.data(), n, false, Precision::fp32});
  size_t differ = 0;
  for (size_t i = 0; i < canon.size(); ++i) differ += std::memcmp(&canon[i], &vendor[i], 4) != 0;
  MESSAGE("gemm 64x64x2048: ", differ, " of ", canon.size(), " outputs differ between canonical and OpenBLAS");
  CHECK(differ > 0);

  // The same through the whole model. OpenBLAS 0.3.21's sgemm runs the same ascending-k fma chain
  // as the canonical kernel while k fits in one of its k-blocks (k <= 320 on the AMD machines, at
  // least 384 on an Intel Xeon with OPENBLAS_CORETYPE=Haswell, measured; see docs/CORE.md), so the
  // model differs once a GEMM has a longer k: n_embd = 256 gives the MLP projection k = 1024.
  GPTConfig cfg = small_config(NormKind::layernorm, true, true);
  cfg.n_embd = 256;
  const auto data = make_leaves(cfg);
  GPT mc(cfg, kLeafSize, *be_c), mv(cfg, kLeafSize, *be_v);
  mc.init(3);
  mv.init(3);
  const Result rc = run_batch(*be_c, mc, data, {0, 1, 2, 3});
  const Result rv = run_batch(*be_v, mv, data, {0, 1, 2, 3});
  size_t grad_differ = 0;
  for (size_t i = 0; i < rc.grad.size(); ++i) grad_differ += std::memcmp(&rc.grad[i], &rv.grad[i], 4) != 0;
  MESSAGE("model n_embd=256: ", grad_differ, " of ", rc.grad.size(),
          " gradient elements differ between gemm=canonical and gemm=vendor");
  CHECK(grad_differ > 0);
  omp_set_num_threads(saved);
}
