// Expert parallelism's building blocks (docs/DISTRIBUTED.md §12): the all-to-all of variable parts
// on 1-5 simulated ranks moves every byte to where it belongs; the accumulator's add of tensor spans
// is bitwise the add of a copy zeroed outside them (both rounded, and with a positive control);
// the expert shard's layout holds the shared tensors first and its own experts after a wire
// segment, every routed expert on exactly one shard.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/parallel/launch.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "samebits/det/block_wire.hpp"

TEST_CASE("alltoallv moves each rank's part for every rank, any part sizes, on 1-5 ranks") {
  for (int world = 1; world <= 5; ++world) {
    CAPTURE(world);
    // Rank r sends (r + 2q) % 4 bytes to rank q, byte k of it = 16r + q + 64k (mod 256).
    const auto bytes = [](int r, int q) { return size_t((r + 2 * q) % 4); };
    const auto value = [](int r, int q, size_t k) { return static_cast<unsigned char>(16 * r + q + 64 * int(k)); };
    sb::ThreadWorld threads(world);
    std::vector<std::unique_ptr<sb::Communicator>> comms;
    for (int r = 0; r < world; ++r) comms.push_back(threads.rank(r));
    std::vector<int> wrong(size_t(world), 0);
    sb::run_ranks(world, [&](int r) {
      std::vector<size_t> send(static_cast<size_t>(world)), recv(static_cast<size_t>(world));
      std::vector<unsigned char> out, in;
      for (int q = 0; q < world; ++q) {
        send[size_t(q)] = bytes(r, q), recv[size_t(q)] = bytes(q, r);
        for (size_t k = 0; k < send[size_t(q)]; ++k) out.push_back(value(r, q, k));
      }
      size_t total = 0;
      for (size_t b : recv) total += b;
      in.assign(total, 0xEE);
      comms[size_t(r)]->alltoallv(out.data(), send.data(), in.data(), recv.data());
      size_t at = 0;
      for (int q = 0; q < world; ++q)
        for (size_t k = 0; k < recv[size_t(q)]; ++k) wrong[size_t(r)] += in[at++] != value(q, r, k);
    });
    for (int r = 0; r < world; ++r) CHECK(wrong[size_t(r)] == 0);
  }
}

TEST_CASE("GradAccumulator::add_spans is the add of the gradient zeroed outside the spans, bit for bit") {
  const std::unique_ptr<sb::Backend> be = sb::make_cpu_backend();
  const size_t n = 3000;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-30, 10);
  std::vector<float> base(n), g(n);
  for (size_t i = 0; i < n; ++i)
    base[i] = std::ldexp(normal(rng), scale(rng)), g[i] = std::ldexp(normal(rng), scale(rng));
  // Spans inside one wire block, across blocks, ending at n, one of a single element.
  const std::vector<sb::TensorSpan> spans = {{5, 20}, {40, 700}, {1000, 1}, {2016, 984}};
  std::vector<float> masked(n, 0.0f);
  for (const sb::TensorSpan& s : spans) std::memcpy(&masked[s.offset], &g[s.offset], s.numel * sizeof(float));
  const auto rounded = [&](bool by_spans, const std::vector<float>& second) {
    const std::unique_ptr<sb::GradAccumulator> acc = be->make_accumulator(n);
    acc->add(base.data());
    if (by_spans) acc->add_spans(second.data(), spans);
    else acc->add(second.data());
    std::vector<float> out(n);
    acc->round(out.data(), 1.0f);
    CHECK(acc->adds() == 2);
    return out;
  };
  const std::vector<float> a = rounded(true, g), b = rounded(false, masked), all = rounded(false, g);
  CHECK(std::memcmp(a.data(), b.data(), n * sizeof(float)) == 0);
  CHECK(std::memcmp(a.data(), all.data(), n * sizeof(float)) != 0);  // the elements outside the spans
}

TEST_CASE("an expert shard's layout: shared tensors first, its experts from a wire segment on, each expert once") {
  sb::GPTConfig m;
  m.vocab = 256, m.seq_len = 32, m.n_layer = 2, m.n_head = 4, m.n_embd = 64;
  m.moe_experts = 8, m.moe_top_k = 2, m.moe_shared_experts = 1, m.moe_ffn_dim = 96;
  constexpr size_t kSegment = size_t{sb::det::kWireSegment} * sb::det::kWireBlock;
  for (const int ep : {1, 2, 4, 8}) {
    CAPTURE(ep);
    std::vector<int> held(size_t(2 * 8), 0);  // (layers × experts) how many shards hold each
    for (int r = 0; r < ep; ++r) {
      const sb::TpLayout t = sb::gpt_tp_layout(m, 1, 0, 1, 0, sb::ExpertShard{ep, r});
      bool experts = false;
      for (const sb::ParamView& p : t.local) {
        const int e = sb::routed_expert_of(p.name);
        if (e < 0) {
          if (ep > 1) CHECK_FALSE(experts);  // no shared tensor after the first expert's (EP 1: model order)
          continue;
        }
        if (!experts && ep > 1) CHECK(p.offset % kSegment == 0);
        experts = true;
        CHECK((e >= r * 8 / ep && e < (r + 1) * 8 / ep));
        if (p.name.find(".fc.w") != std::string::npos) ++held[size_t(std::stoi(p.name.substr(2)) * 8 + e)];
      }
    }
    for (int h : held) CHECK(h == 1);
  }
  CHECK(sb::routed_expert_of("h.12.moe.e31.proj.b") == 31);
  CHECK(sb::routed_expert_of("h.0.moe.s0.fc.w") == -1);
  CHECK(sb::routed_expert_of("h.0.moe.router.w") == -1);
  CHECK(sb::routed_expert_of("h.0.mlp.fc.w") == -1);
}
