// stream_cells.hpp: the world-size and micro-leaves columns from traced training steps.
#include "invariance/stream_cells.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/divergence.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/train/trainer.hpp"
#include "support/tiny_gpt.hpp"

namespace sb::invariance {
namespace {

// The three experiments: LayerNorm, biases, tied head, Muon with QK-clip and a clip that act;
// RMSNorm, no biases, an untied head, AdamW; the first with NorMuon and cautious weight decay.
std::vector<Config> experiments() {
  test::TinyGpt t;
  t.steps = 4;
  t.warmup = 1;
  Config a = test::tiny_gpt_config(t);
  a.optim.qk_clip = 0.001;  // below the tiny model's max logits: heads are clipped
  a.optim.clip = 0.05;
  a.run.progress = Progress::off;
  Config b = a;
  b.model.norm = NormKind::rmsnorm;
  b.model.bias = false;
  b.model.tied_head = false;
  b.optim.name = OptimizerName::adamw;
  b.optim.qk_clip = 0.0;
  Config c = a;  // NorMuon with cautious weight decay: muon_apply_rows
  c.optim.name = OptimizerName::normuon;
  c.optim.cautious_wd = true;
  c.optim.weight_decay = 0.1;
  return {a, b, c};
}

// The catalog rows a stream row belongs to: its op, and newton_schulz for the rows inside one; for
// the trainer's rows ("allreduce gradient": the accumulated gradient all-reduced and rounded;
// "round wte": its tensors; "scale wte": after the clip) the accumulator and the clip; none for
// "update wte" (the optimizer's result, made of the kernel rows before it).
std::vector<std::string> catalog_rows(const trace::Row& r) {
  const std::string first = r.op.substr(0, r.op.find(' '));
  if (first == "round" || r.site == "allreduce") return {"grad_accumulator"};
  if (first == "scale" && first != r.op) return {"clip"};
  if (first != r.op) return {};
  if (r.site.find("newton_schulz") != std::string::npos) return {r.op, "newton_schulz"};
  return {r.op};
}

struct OpTally {
  size_t rows = 0;
  std::string first_difference;
};

// One row of the reference against the other stream's row at its place (null: the streams do
// not line up).
void tally_row(const trace::Row& ref, const trace::Row* other, const std::string& label, OpTally& t) {
  ++t.rows;
  if (!t.first_difference.empty()) return;
  if (other == nullptr || other->op != ref.op || other->site != ref.site || other->leaf != ref.leaf) {
    t.first_difference = label + ": the op sequence differs";
    return;
  }
  if (other->outputs == ref.outputs) return;
  std::vector<float> x(ref.values.size()), y(other->values.size());
  std::memcpy(x.data(), ref.values.data(), x.size() * sizeof(float));
  std::memcpy(y.data(), other->values.data(), y.size() * sizeof(float));
  const cli::TensorDistance d = cli::tensor_distance(ref.name(), x, y);
  t.first_difference = label + ", `" + ref.name() + "`: " + distance_text(d.max_ulp, d.differing, d.numel);
}

void compare(const std::vector<trace::Row>& ref, const std::vector<trace::Row>& other, const std::string& label,
             std::map<std::string, OpTally>& tally) {
  const bool aligned = ref.size() == other.size();
  for (size_t i = 0; i < ref.size(); ++i) {
    for (const std::string& row : catalog_rows(ref[i]))
      tally_row(ref[i], aligned ? &other[i] : nullptr, label, tally[row]);
  }
}

std::map<std::string, std::string> cells(const std::map<std::string, OpTally>& tally) {
  std::map<std::string, std::string> out;
  for (const auto& [row, t] : tally)
    out[row] =
        t.first_difference.empty() ? "identical (" + std::to_string(t.rows) + " rows compared)" : t.first_difference;
  return out;
}

}  // namespace

std::string distance_text(uint64_t max_ulp, uint64_t differing, uint64_t numel) {
  char text[96];
  const double pct = numel ? 100.0 * double(differing) / double(numel) : 0.0;
  if (max_ulp == cli::kUlpNaN)
    std::snprintf(text, sizeof text, "a NaN differs, %.3g %% of %llu differ", pct, (unsigned long long)numel);
  else
    std::snprintf(text, sizeof text, "max %llu ULP, %.3g %% of %llu differ", (unsigned long long)max_ulp, pct,
                  (unsigned long long)numel);
  return text;
}

StreamCells stream_cells() {
  std::map<std::string, OpTally> world, micro;
  for (const Config& config : experiments()) {
    cli::ReplaySetup one;
    one.config = config;
    const std::unique_ptr<Backend> backend = make_backend(config, 0);
    const std::unique_ptr<Communicator> comm = make_local_communicator();
    Trainer trainer(config, *backend, *comm, TrainerOptions{});
    trainer.step();
    const TrainerState state = trainer.export_state();
    const std::vector<trace::Row> ref = cli::replay_stream(one, state, 2);
    for (int ranks : {2, 3, 4}) {
      cli::ReplaySetup s = one;
      s.world = ranks;
      compare(ref, cli::replay_stream(s, state, 2), std::to_string(ranks) + " ranks", world);
    }
    for (int64_t m : {1, 2}) {
      cli::ReplaySetup s = one;
      s.micro_leaves = m;
      compare(ref, cli::replay_stream(s, state, 2), "micro-batches of " + std::to_string(m), micro);
    }
  }
  return {cells(world), cells(micro)};
}

}  // namespace sb::invariance
