// Divergence analysis of two run files (`samebits diff`, and the sweeps and notebooks):
// whether they are the same experiment, the first step where any recorded bit differs (which
// fingerprints, which tensors), the loss gap over the steps, and per-tensor distances of the
// parameters wherever both files hold them (snapshots, final states): max ULP distance, fraction
// of differing elements, relative L2 distance; the whole-model distance curve over those states,
// its growth (divergence.hpp) and the prediction agreement of each shared state. "Identical" means
// every experiment column of /series (docs/FORMAT.md; not the communication traffic or wall time)
// is bitwise equal for equally many steps, and every shared parameter state too.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "samebits/cli/divergence.hpp"
#include "samebits/core/io/run_file.hpp"

namespace sb::cli {

struct TensorDistance {
  std::string tensor;
  uint64_t numel = 0;
  uint64_t differing = 0;        // elements whose bits differ
  uint64_t max_ulp = 0;          // over the elements (kUlpNaN: a NaN difference)
  double rel_l2 = 0;             // ‖a − b‖₂ / ‖a‖₂ in fp64 (0 when equal; inf when a = 0 ≠ b)
  int64_t first_differing = -1;  // flat index in the tensor, -1 when none
  double fraction() const { return numel ? double(differing) / double(numel) : 0.0; }
};
// a, b: (numel) the same tensor of two runs.
TensorDistance tensor_distance(const std::string& name, std::span<const float> a, std::span<const float> b);

// The parameters of both runs after one step.
struct StateDistance {
  int64_t step = 0;
  std::string source;                   // "snapshot" or "final state"
  std::vector<TensorDistance> tensors;  // layout order
  double rel_l2 = 0;                    // whole model: ‖a − b‖₂ / ‖a‖₂ over every tensor
  uint64_t differing_tensors() const;
};
// Every tensor's distance.  a, b: (flat_size(tensors)) flat parameters.
StateDistance state_distance(int64_t step, std::string source, const std::vector<run::TensorInfo>& tensors,
                             std::span<const float> a, std::span<const float> b);

struct RunSide {
  std::string path, experiment_id, status, backend;
  int64_t steps = 0;  // recorded
};

struct RunDiff {
  RunSide a, b;
  bool same_experiment = false;
  std::vector<std::string> experiment_differences;  // "numerics.gemm = canonical | vendor"
  bool same_layout = false;                         // equal tensor tables
  int64_t compared_steps = 0;                       // min(a.steps, b.steps)
  int64_t first_divergent_step = 0;                 // 0: none within compared_steps
  std::vector<std::string> divergent_columns;       // columns differing at that step
  std::vector<std::string> divergent_params;        // tensors whose parameter fingerprint differs there
  std::vector<std::string> divergent_grads;         // … gradient fingerprint
  std::vector<double> loss_gap;                     // (compared_steps) |loss_a − loss_b|
  std::vector<float> loss_a, loss_b;                // (compared_steps)
  std::vector<StateDistance> states;                // shared snapshots and final states, by step
  std::vector<DistancePoint> distance;              // (states) the whole-model curve
  Growth growth;                                    // of `distance` (divergence.hpp)
  std::vector<Agreement> agreement;                 // (states) when computed (DiffOptions)
  std::string agreement_note;                       // why `agreement` is empty despite states
  bool identical() const;
};
// The whole-model point of a StateDistance.
DistancePoint distance_point(const StateDistance& s);

struct DiffOptions {
  double threshold = kDistanceThreshold;  // Growth::threshold
  // The prediction agreement at every shared state, on the AgreementProbe of run A's recorded
  // config. Needs equal tensor tables and a config this samebits parses; skipped otherwise.
  bool agreement = true;
  int64_t agreement_sequences = 0;  // AgreementProbe's batch (0: its default)
};

// Compares two run files (opened and checked by RunReader). Tensor-wise results need equal
// tensor tables; with different ones only the per-step scalars are compared.
RunDiff diff_runs(const run::RunReader& a, const run::RunReader& b, const DiffOptions& options = {});

// The report `samebits diff` prints, and its --json form.
std::string diff_text(const RunDiff& d);
std::string diff_json(const RunDiff& d);

}  // namespace sb::cli
