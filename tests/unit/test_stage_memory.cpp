// What a rank holds under pipeline and tensor parallelism (docs/DISTRIBUTED.md §10, §11), on
// simulated ranks: each rank's weights, gradients, accumulator and optimizer state are the bytes of
// its own tensors, and one replica's ranks together hold one process's (a tied wte once more), so a
// layout that fell back to every rank holding everything fails; export_state leaves the full tensors
// on rank 0 alone, and stream_state gives rank 0 the same arrays fetched one at a time from their
// stages. Byte counts and the streamed copy only: the training bits are test_pipeline_threads'.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/tiny_gpt.hpp"

namespace {

// One rank's byte counts after a step and a checkpoint export.
struct Held {
  int dp = 0, tp = 0;
  size_t flat = 0;  // layout_flat_size of the plan's local tensors
  size_t weights = 0, grads = 0, batch_gradient = 0, accumulator_elements = 0;
  size_t state = 0;           // the optimizer's state_bytes()
  size_t expected_state = 0;  // Σ over the local tensors of numel × the one process's bytes a value
  size_t counted = 0;         // local values, a tensor replicated over TP counted on TP rank 0 only
  size_t counted_state = 0;   // the same for the expected state bytes
  size_t exported_weights = 0, exported_arrays = 0;
  int streamed = 0;           // stream_state's calls of its writer (rank 0 alone)
  bool streamed_same = true;  // its parts: export_state's names, sizes and bits
};

// The one process's optimizer state bytes per value of each tensor (by name).
std::map<std::string, size_t> state_per_value(sb::Trainer& one) {
  std::map<std::string, size_t> out;
  for (const sb::StateBuffer& b : one.optimizer().state()) {
    const std::string tensor = b.name.substr(0, b.name.find('/'));
    const sb::ParamView* p = sb::find_param(one.plan().local_layout(), tensor);
    REQUIRE(p != nullptr);
    REQUIRE(b.numel == p->numel);
    out[tensor] += sizeof(float);
  }
  return out;
}

std::vector<Held> held_per_rank(const sb::Config& config, int world, const std::map<std::string, size_t>& per_value) {
  sb::ThreadWorld threads(world);
  std::vector<std::unique_ptr<sb::Communicator>> comms;
  for (int r = 0; r < world; ++r) comms.push_back(threads.rank(r));
  std::vector<Held> held(static_cast<size_t>(world));
  sb::run_ranks(world, [&](int r) {
    const std::unique_ptr<sb::Backend> backend = sb::make_cpu_backend(sb::to_numerics(config));
    sb::Trainer trainer(config, *backend, *comms[size_t(r)]);
    trainer.step();
    Held& h = held[size_t(r)];
    for (const sb::MeshAxis& a : trainer.plan().mesh()) {
      if (a.name == "dp") h.dp = a.rank;
      if (a.name == "tp") h.tp = a.rank;
    }
    const std::vector<sb::ParamView>& local = trainer.plan().local_layout();
    const std::vector<sb::ParamView>& full = trainer.plan().full_layout();
    h.flat = sb::layout_flat_size(local);
    h.weights = trainer.model().weights().bytes();
    h.grads = trainer.model().grads().bytes();
    h.batch_gradient = trainer.gradient().bytes();
    h.accumulator_elements = trainer.accumulator().size();
    h.state = trainer.optimizer().state_bytes();
    for (const sb::ParamView& p : local) {
      const size_t bytes = p.numel * per_value.at(p.name);
      h.expected_state += bytes;
      const bool replicated = sb::find_param(full, p.name)->numel == p.numel;
      if (replicated && h.tp != 0) continue;
      h.counted += p.numel;
      h.counted_state += bytes;
    }
    const sb::TrainerState s = trainer.export_state();
    h.exported_weights = s.weights.size();
    h.exported_arrays = s.optimizer.size();
    // The same state as parts fetched one at a time (each array from the stage that owns it).
    trainer.stream_state([&](const sb::TrainerState& head, const sb::StateParts& parts) {
      ++h.streamed;
      bool same = head.step == s.step && head.weights.empty() && parts.tensors == full.size() &&
                  parts.names.size() == s.optimizer.size();
      for (size_t t = 0; same && t < full.size(); ++t)
        same = std::memcmp(parts.weights(t), s.weights.data() + full[t].offset, full[t].numel * sizeof(float)) == 0;
      for (size_t i = 0; same && i < parts.names.size(); ++i) {
        const sb::StateArray& a = s.optimizer[i];
        same = parts.names[i] == a.name && parts.sizes[i] == a.data.size() &&
               std::memcmp(parts.array(i), a.data.data(), a.data.size() * sizeof(float)) == 0;
      }
      h.streamed_same = same;
    });
  });
  return held;
}

}  // namespace

TEST_CASE("each rank holds its stage's tensors: weights, gradients, accumulator and optimizer state") {
  struct Case {
    int world, tp, pp;
    bool tied;
  };
  const Case cases[] = {{4, 1, 4, true}, {4, 1, 2, false}, {4, 2, 2, true}, {8, 2, 4, true}};
  for (const Case& c : cases) {
    CAPTURE(c.world);
    CAPTURE(c.tp);
    CAPTURE(c.pp);
    sb::test::TinyGpt tiny;
    tiny.n_layer = 4;
    tiny.steps = 1;
    tiny.warmup = 0;
    tiny.leaves = c.world;
    sb::Config config = sb::test::tiny_gpt_config(tiny);
    config.model.tied_head = c.tied;
    sb::Trainer one(config);
    one.step();
    const std::map<std::string, size_t> per_value = state_per_value(one);
    size_t one_values = 0;
    for (const sb::ParamView& p : one.plan().local_layout()) one_values += p.numel;
    const size_t one_state = one.optimizer().state_bytes();
    const size_t wte = c.tied ? sb::find_param(one.plan().full_layout(), "wte")->numel : 0;  // the head's copy

    config.parallel.tp = c.tp;
    config.parallel.pp = c.pp;
    size_t replica_values = 0, replica_state = 0;
    const std::vector<Held> held = held_per_rank(config, c.world, per_value);
    for (size_t r = 0; r < held.size(); ++r) {
      CAPTURE(r);
      const Held& h = held[r];
      CHECK(h.weights == h.flat * sizeof(float));
      CHECK(h.grads == h.flat * sizeof(float));
      CHECK(h.batch_gradient == h.flat * sizeof(float));
      CHECK(h.accumulator_elements == h.flat);
      CHECK(h.state == h.expected_state);
      CHECK(h.flat < one.model().flat_size());
      CHECK(h.exported_weights == (r == 0 ? one.model().flat_size() : 0));  // the full tensors: the writer's alone
      CHECK(h.exported_arrays == (r == 0 ? one.optimizer().state().size() : 0));
      CHECK(h.streamed == (r == 0 ? 1 : 0));
      CHECK(h.streamed_same);
      if (h.dp != 0) continue;
      replica_values += h.counted;
      replica_state += h.counted_state;
    }
    // One replica's ranks hold one process's values (the tied wte on the last stage too), and
    // one process's optimizer state of them.
    CHECK(replica_values == one_values + wte);
    CHECK(replica_state == one_state + wte * per_value.at("wte"));
  }
}
