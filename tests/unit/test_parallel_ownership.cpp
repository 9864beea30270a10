// Ownership of the distributed optimizer (parallel/ownership.hpp): the greedy LPT assignment on known
// inputs (order, tie-breaks, more ranks than tensors), its list-scheduling bound on the default
// GPT's Muon costs for 1–8 ranks, bad input refused; and ShardedOptimizer in a world of one rank:
// the unsharded optimizer's bits, gather_state = state(), scatter_state restores, set_owned
// refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/ownership.hpp"
#include "samebits/core/parallel/sharded_optimizer.hpp"
#include "samebits/det/error.hpp"

TEST_CASE("assign_owners: decreasing cost to the least-loaded rank, ties to the lower index/rank") {
  const sb::Ownership o = sb::assign_owners({5, 3, 3, 2, 1}, 2);
  CHECK(o.owner == std::vector<int>{0, 1, 1, 0, 1});
  CHECK(o.load == std::vector<double>{7, 7});
  CHECK(o.imbalance() == 1.0);
  CHECK(o.owned_by(1) == std::vector<bool>{false, true, true, false, true});

  CHECK(sb::assign_owners({1, 1, 1, 1}, 3).owner == std::vector<int>{0, 1, 2, 0});
  CHECK(sb::assign_owners({1, 4, 2}, 1).owner == std::vector<int>{0, 0, 0});
  const sb::Ownership wide = sb::assign_owners({2, 9}, 5);
  CHECK(wide.owner == std::vector<int>{1, 0});
  CHECK(wide.load == std::vector<double>{9, 2, 0, 0, 0});
  CHECK(sb::assign_owners({}, 3).load == std::vector<double>{0, 0, 0});
}

TEST_CASE("assign_owners: refuses a world below 1 and negative or non-finite costs") {
  CHECK_THROWS_AS(sb::assign_owners({1}, 0), sb::Error);
  CHECK_THROWS_AS(sb::assign_owners({1, -1}, 2), sb::Error);
  CHECK_THROWS_AS(sb::assign_owners({std::numeric_limits<double>::quiet_NaN()}, 2), sb::Error);
}

TEST_CASE("assign_owners on the default GPT's Muon costs: within the list-scheduling bound") {
  const std::vector<sb::ParamView> layout = sb::gpt_param_layout(sb::GPTConfig{});
  auto be = sb::make_cpu_backend();
  const std::vector<double> cost =
      sb::make_optimizer(sb::OptimConfig{}, layout, *be, sb::Precision::fp32)->update_cost();
  REQUIRE(cost.size() == layout.size());
  // The pure function the distributed optimizer balances by under tensor parallelism.
  CHECK(sb::update_cost(sb::OptimConfig{}, layout) == cost);
  sb::OptimConfig adamw;
  adamw.name = sb::OptimizerName::adamw;
  CHECK(sb::update_cost(adamw, layout) == sb::make_optimizer(adamw, layout, *be, sb::Precision::fp32)->update_cost());
  const double total = std::accumulate(cost.begin(), cost.end(), 0.0);
  const double largest = *std::max_element(cost.begin(), cost.end());
  for (int world = 1; world <= 8; ++world) {
    CAPTURE(world);
    const sb::Ownership o = sb::assign_owners(cost, world);
    REQUIRE(o.world() == world);
    CHECK(std::accumulate(o.load.begin(), o.load.end(), 0.0) == total);
    for (size_t i = 0; i < cost.size(); ++i) CHECK((o.owner[i] >= 0 && o.owner[i] < world));
    // Greedy list scheduling: no rank exceeds the mean by more than one tensor's cost.
    CHECK(*std::max_element(o.load.begin(), o.load.end()) <= total / world + largest);
    CHECK(sb::assign_owners(cost, world).owner == o.owner);
  }
}

namespace {

// Weights and gradients of a small GPT layout: (flat) each, deterministic values.
std::vector<float> values(size_t flat, float scale, uint32_t seed) {
  std::vector<float> v(flat);
  uint32_t x = seed;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

std::vector<float> concat(const std::vector<sb::StateBuffer>& buffers) {
  std::vector<float> v;
  for (const sb::StateBuffer& b : buffers) v.insert(v.end(), b.data, b.data + b.numel);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("ShardedOptimizer in a world of one: the unsharded bits, gather and scatter") {
  sb::GPTConfig model;
  model.n_layer = 1;
  model.n_embd = 32;
  model.n_head = 2;
  model.vocab = 64;
  model.seq_len = 16;
  const std::vector<sb::ParamView> layout = sb::gpt_param_layout(model);
  const size_t flat = layout.back().offset + layout.back().numel;
  auto be = sb::make_cpu_backend();
  auto comm = sb::make_local_communicator();
  auto plain = sb::make_optimizer(sb::OptimConfig{}, layout, *be, sb::Precision::fp32);
  sb::ShardedOptimizer sharded(sb::make_optimizer(sb::OptimConfig{}, layout, *be, sb::Precision::fp32), layout,
                               sb::update_cost(sb::OptimConfig{}, layout), *be, *comm);
  CHECK(sharded.ownership().owner == std::vector<int>(layout.size(), 0));
  std::vector<float> w1 = values(flat, 0.1f, 1), w2 = w1;
  for (int s = 1; s <= 2; ++s) {
    const std::vector<float> g = values(flat, 1.0f, 10u + uint32_t(s));
    sb::StepContext ctx;
    ctx.step = s;
    plain->step(w1.data(), g.data(), ctx);
    sharded.step(w2.data(), g.data(), ctx);
  }
  CHECK(same_bits(w1, w2));
  CHECK(same_bits(concat(plain->state()), concat(sharded.state())));
  CHECK(sharded.state_bytes() == plain->state_bytes());
  CHECK(sb::state_bytes_per_rank(sharded, *comm) == std::vector<uint64_t>{plain->state_bytes()});

  const std::vector<sb::StateArray> full = sharded.gather_state();
  const std::vector<sb::StateBuffer> buffers = plain->state();
  REQUIRE(full.size() == buffers.size());
  for (size_t k = 0; k < full.size(); ++k) {
    CHECK(full[k].name == buffers[k].name);
    CHECK(same_bits(full[k].data, std::vector<float>(buffers[k].data, buffers[k].data + buffers[k].numel)));
  }
  for (const sb::StateBuffer& b : sharded.state()) std::fill(b.data, b.data + b.numel, 0.0f);
  sharded.scatter_state(full);
  CHECK(same_bits(concat(plain->state()), concat(sharded.state())));

  std::vector<sb::StateArray> missing(full.begin(), full.end() - 1);
  CHECK_THROWS_AS(sharded.scatter_state(missing), sb::Error);
  CHECK_THROWS_AS(sharded.set_owned(std::vector<bool>(layout.size(), true)), sb::Error);
}
