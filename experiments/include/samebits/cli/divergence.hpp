// Divergence analysis (docs/STUDIES.md §"Divergence"): the distance of two runs' parameters over
// the steps — lock-step from run files' snapshots (diff.hpp) or side by side in one process
// (side_by_side) — its growth rate and jump step, and the prediction agreement of two parameter
// states on a fixed evaluation batch. Used by `samebits diff`, `samebits sweep` and the notebooks.
// Contract: every number is computed in fp64 in ascending element order from the two states'
// bits, and the probe's forward pass runs canonical kernels, so the answer is the same everywhere.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"

namespace sb::cli {

// Distance in units in the last place between two fp32 encodings: the number of representable
// floats between them (±0 are 0 apart). kUlpNaN when exactly one is NaN or two NaNs differ.
constexpr uint64_t kUlpNaN = UINT64_MAX;
uint64_t ulp_distance(float a, float b);

// The default of Growth::threshold: a relative L2 distance of 1 %.
constexpr double kDistanceThreshold = 1e-2;

// The whole-model distance of two parameter states after `step` steps of both runs.
struct DistancePoint {
  int64_t step = 0;
  double rel_l2 = 0;              // ‖b − a‖₂ / ‖a‖₂ over every tensor (0 when bitwise equal; inf
                                  // when a = 0 ≠ b)
  uint64_t max_ulp = 0;           // largest ULP distance of any element (kUlpNaN: a NaN difference)
  double differing_fraction = 0;  // elements whose bits differ / all elements (padding excluded)
};
// a, b: (flat_size(tensors)) flat parameters.
DistancePoint distance_point(int64_t step, const std::vector<run::TensorInfo>& tensors, std::span<const float> a,
                             std::span<const float> b);

// How fast the distance grows. The fit uses the points at or after the first divergent step with
// 0 < rel_l2 < inf ("fitted points").
struct Growth {
  int64_t points = 0;  // fitted points
  // Least-squares slope of ln(rel_l2) against the step, per step (e-folding time 1/rate), and the
  // fit's ln(rel_l2) at step 0. NaN with fewer than 2 fitted points.
  double rate = std::numeric_limits<double>::quiet_NaN();
  double intercept = std::numeric_limits<double>::quiet_NaN();
  // The jump: of the consecutive pairs of fitted points, the one with the largest increase of
  // ln(rel_l2) per step between them; jump_step is the later point's step (0 with fewer than 2
  // fitted points) and jump its increase per step. The leap from distance 0 to the first
  // non-zero distance is the divergence itself (first divergent step), not a jump.
  int64_t jump_step = 0;
  double jump = std::numeric_limits<double>::quiet_NaN();
  // The first point (any, fitted or not) whose rel_l2 reaches `threshold`; 0 when none does.
  double threshold = kDistanceThreshold;
  int64_t threshold_step = 0;
};
// curve: points in ascending step order. first_divergent_step: 0 when unknown (every point counts).
Growth distance_growth(std::span<const DistancePoint> curve, int64_t first_divergent_step,
                       double threshold = kDistanceThreshold);

// Predictions of two parameter states on the same fixed batch.
struct Agreement {
  int64_t step = 0;
  std::string source;             // "snapshot", "final state", "side by side"
  int64_t positions = 0;          // token positions: sequences × seq_len
  int64_t disagreeing = 0;        // positions whose argmax token differs (ties: the lowest token id)
  double disagreement = 0;        // disagreeing / positions
  double logit_correlation = 1;   // Pearson correlation of all positions × vocab logits, fp64 (two
                                  // passes); 1 when the logits are bitwise equal, NaN when one
                                  // state's logits are constant
  double loss_a = 0, loss_b = 0;  // mean cross-entropy of each state on the batch
  // Mixture-of-Experts models: token positions × MoE blocks, those whose top-k expert set differs
  // between the states (both routed without auxiliary-loss-free biases: the states hold weights),
  // and their fraction; 0 for a dense model.
  int64_t routes = 0, routes_differing = 0;
  double route_disagreement = 0;
};

// The fixed evaluation batch of an experiment and a model to forward it: the first `sequences`
// sequences of the experiment's validation set (0: train.eval_leaves × data.leaf_size), run by
// a GPT on the CPU backend in the experiment's precision with canonical gemm and reductions
// (whatever the runs' numerics switches), one sequence at a time.
class AgreementProbe {
 public:
  explicit AgreementProbe(const Config& config, int64_t sequences = 0);
  ~AgreementProbe();
  AgreementProbe(const AgreementProbe&) = delete;
  AgreementProbe& operator=(const AgreementProbe&) = delete;

  int64_t sequences() const;
  // a, b: (flat_size) flat parameters of this experiment's model.
  Agreement compare(std::span<const float> a, std::span<const float> b, int64_t step = 0, std::string source = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- side by side ------------------------------------------------------------------------------

struct SideBySideOptions {
  double threshold = kDistanceThreshold;  // Growth::threshold
  bool agreement = true;                  // the prediction agreement of the last step's states
  int64_t agreement_sequences = 0;        // AgreementProbe's batch (0: its default)
  // Called at step 0 and after each step of both trainers: the step, A's and B's loss (NaN at
  // step 0) and the distance point taken then (null when none).
  std::function<void(int64_t step, float loss_a, float loss_b, const DistancePoint* point)> progress;
};

struct SideBySide {
  std::string experiment_a, experiment_b;           // experiment ids
  std::vector<std::string> experiment_differences;  // "perturb.tensor = (absent) | wte", as diff
  int64_t steps = 0;
  int64_t every = 1;
  // The first step after which the loss, gradient norm, or any tensor's parameter or gradient
  // fingerprint of the two trainers differ (bitwise); 0 when none within `steps`.
  int64_t first_divergent_step = 0;
  std::vector<float> loss_a, loss_b;    // (steps)
  std::vector<DistancePoint> distance;  // after steps 0, every, 2·every, …, and `steps`
  Growth growth;
  std::optional<Agreement> agreement;  // after `steps` (options.agreement)
  bool identical() const;              // no divergent step and every distance point 0
};

// Trains a and b side by side in this process (two sb::Trainer on the CPU backend, one step of a
// then one of b) for `steps` steps (at most each one's train.steps; 0: a's train.steps), taking a
// distance point at step 0 and after every `every` steps and the last. The two models must have
// the same tensor table (a different optimizer, data, seed, numerics or perturbation is what is
// compared). Throws sb::Error otherwise.
SideBySide side_by_side(const Config& a, const Config& b, int64_t steps, int64_t every,
                        const SideBySideOptions& options = {});

// The text and the JSON object `samebits diff --side-by-side [--json]` prints.
std::string side_by_side_text(const SideBySide& s);
std::string side_by_side_json(const SideBySide& s);

// ---- shared by the text and JSON reports ----------------------------------------------------

// "key = value_a | value_b" for every experiment_text field that differs ("(absent)" when missing).
std::vector<std::string> experiment_field_differences(const std::string& text_a, const std::string& text_b);

// JSON forms: {"step", "rel_l2", "max_ulp", "differing_fraction"}, {"points", "rate", "intercept",
// "jump_step", "jump", "threshold", "threshold_step"}, {"step", "source", "positions",
// "disagreeing", "disagreement", "logit_correlation", "loss_a", "loss_b"}; non-finite numbers,
// kUlpNaN and absent steps (0) are null.
std::string distance_json(const DistancePoint& p);
std::string growth_json(const Growth& g);
std::string agreement_json(const Agreement& a);
// Text lines: the distance curve (at most `rows` rows, the first non-zero point and the last kept)
// with its growth, and the agreement.
std::string distance_text(const std::vector<DistancePoint>& curve, const Growth& growth, std::size_t rows = 12);
std::string agreement_text(const Agreement& a);
// "loss gap     max G at step S; final F (step N)", or "… 0 at all N steps" when every gap is 0.
// gap: (steps) |loss_a − loss_b| of steps 1 … N.
std::string loss_gap_text(std::span<const double> gap);

}  // namespace sb::cli
