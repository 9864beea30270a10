// Pipeline stages keep the bits on simulated ranks (docs/DISTRIBUTED.md §11; thread_world.hpp's
// sub-worlds and buffered point-to-point, in one process): a 4-block tiny GPT at PP 2 (1F1B), PP 4
// (GPipe), DP 2 × PP 2 with an untied head and DP 2 × TP 2 × PP 2 — every rank's every step's
// recorded fields, fingerprints, final weights and optimizer state equal to one process's (memcmp).
#include <doctest/doctest.h>

#include <memory>
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
    for (const sb::test::RunBits& got : ranks_bits(config, c.world)) sb::test::check_same(ref, got);
  }
}
