// Pipeline stages keep the bits on simulated ranks (docs/DISTRIBUTED.md §11; thread_world.hpp's
// sub-worlds and buffered point-to-point, in one process): a 4-block tiny GPT at PP 2 (1F1B), PP 4
// (GPipe), DP 2 × PP 2 with an untied head and DP 2 × TP 2 × PP 2; and, as a property, every
// DP × TP × PP factorization of 8 ranks (8 blocks, 8 heads) and of 6 ranks (6 blocks, 6 heads:
// PP 3, TP 3, TP 6) under both schedules — every rank's every step's recorded fields and
// fingerprints, and the final weights and optimizer state that rank 0 exports (the others export
// none), equal to one process's (memcmp).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "support/train_bits.hpp"

namespace {

// Every rank's RunBits of `config` on `world` simulated ranks.
std::vector<sb::test::RunBits> ranks_bits(const sb::Config& config, int world) {
  sb::ThreadWorld threads(world);
  std::vector<std::unique_ptr<sb::Communicator>> comms;
  for (int r = 0; r < world; ++r) comms.push_back(threads.rank(r));
  std::vector<sb::test::RunBits> bits(static_cast<size_t>(world));
  sb::run_ranks(world, [&](int r) {
    const std::unique_ptr<sb::Backend> backend = sb::make_cpu_backend(sb::to_numerics(config));
    sb::Trainer trainer(config, *backend, *comms[size_t(r)]);
    while (!trainer.finished()) sb::test::record(bits[size_t(r)], trainer.step());
    sb::test::finish(bits[size_t(r)], trainer);
  });
  return bits;
}

// Every rank's series equal to ref's; rank 0's final weights and optimizer state too, the other
// ranks' empty (export_state assembles the full tensors on rank 0 alone).
void check_ranks(const sb::test::RunBits& ref, const std::vector<sb::test::RunBits>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    CAPTURE(r);
    if (r == 0) {
      sb::test::check_same(ref, ranks[r]);
      continue;
    }
    CHECK(sb::test::same_bits(ref.series, ranks[r].series));
    CHECK(ranks[r].weights.empty());
    CHECK(ranks[r].state.empty());
  }
}

}  // namespace

TEST_CASE("pipeline stages on simulated ranks: every rank records the one-process bits") {
  struct Case {
    int world, tp, pp;
    sb::PipeSchedule schedule;
    bool tied;
  };
  const Case cases[] = {{2, 1, 2, sb::PipeSchedule::one_f_one_b, true},
                        {4, 1, 4, sb::PipeSchedule::gpipe, true},
                        {4, 1, 2, sb::PipeSchedule::one_f_one_b, false},
                        {8, 2, 2, sb::PipeSchedule::one_f_one_b, true}};
  for (const Case& c : cases) {
    CAPTURE(c.world);
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    sb::test::TinyGpt tiny;
    tiny.n_layer = 4;
    tiny.steps = 3;
    sb::Config config = sb::test::tiny_gpt_config(tiny);
    config.model.tied_head = c.tied;
    const sb::test::RunBits ref = sb::test::run_bits(config);
    config.parallel.tp = c.tp;
    config.parallel.pp = c.pp;
    config.parallel.pp_schedule = c.schedule;
    check_ranks(ref, ranks_bits(config, c.world));
  }
}

namespace {

// Every (dp, tp, pp) with dp · tp · pp = world, tp dividing the heads and pp the blocks.
struct Layout {
  int dp, tp, pp;
};
std::vector<Layout> factorizations(int world, int heads, int blocks) {
  std::vector<Layout> out;
  for (int tp = 1; tp <= world; ++tp)
    for (int pp = 1; pp * tp <= world; ++pp)
      if (world % (tp * pp) == 0 && heads % tp == 0 && blocks % pp == 0) out.push_back({world / (tp * pp), tp, pp});
  return out;
}

// The model of `blocks` blocks and `heads` heads (head width 4 or 6) on `world` simulated ranks:
// each factorization, each schedule (one run where pp = 1), against one process.
void check_every_layout(int world, int blocks, int heads, size_t expected_layouts) {
  sb::test::TinyGpt tiny;
  tiny.n_layer = blocks;
  tiny.steps = 2;
  tiny.leaves = world;
  sb::Config config = sb::test::tiny_gpt_config(tiny);
  config.model.n_head = heads;
  config.model.n_embd = heads * (world == 8 ? 4 : 6);
  const sb::test::RunBits ref = sb::test::run_bits(config);
  const std::vector<Layout> layouts = factorizations(world, heads, blocks);
  REQUIRE(layouts.size() == expected_layouts);
  int runs = 0;
  for (const Layout& l : layouts)
    for (sb::PipeSchedule schedule : {sb::PipeSchedule::one_f_one_b, sb::PipeSchedule::gpipe}) {
      if (l.pp == 1 && schedule == sb::PipeSchedule::gpipe) continue;
      CAPTURE(l.dp);
      CAPTURE(l.tp);
      CAPTURE(l.pp);
      CAPTURE(schedule == sb::PipeSchedule::gpipe);
      sb::Config c = config;
      c.parallel.tp = l.tp;
      c.parallel.pp = l.pp;
      c.parallel.pp_schedule = schedule;
      check_ranks(ref, ranks_bits(c, world));
      ++runs;
    }
  MESSAGE(world, " ranks: ", layouts.size(), " layouts, ", runs, " runs equal to one process");
}

}  // namespace

TEST_CASE("every DP x TP x PP factorization of 8 ranks (8 blocks, 8 heads) records the one-process bits") {
  // tp, pp in {1, 2, 4, 8} with tp · pp | 8: ten layouts.
  check_every_layout(8, 8, 8, 10);
}

TEST_CASE("every DP x TP x PP factorization of 6 ranks (6 blocks, 6 heads) records the one-process bits") {
  // tp, pp in {1, 2, 3, 6} with tp · pp | 6: nine layouts, TP 2 × PP 3 and TP 3 × PP 2 among them.
  check_every_layout(6, 6, 6, 9);
}

TEST_CASE("the property test's positive control: a layout that changes a bit is caught") {
  // The same comparison must fail for a different experiment (one warm-up step less), so a
  // check_same that compared nothing could not pass the property above.
  sb::test::TinyGpt tiny;
  tiny.n_layer = 2;
  tiny.steps = 2;
  sb::Config config = sb::test::tiny_gpt_config(tiny);
  const sb::test::RunBits ref = sb::test::run_bits(config);
  config.train.warmup -= 1;
  config.parallel.pp = 2;
  for (const sb::test::RunBits& got : ranks_bits(config, 2)) {
    CHECK_FALSE(sb::test::same_bits(ref.series, got.series));
    CHECK_FALSE(sb::test::same_bits(ref.weights, got.weights));
  }
}
