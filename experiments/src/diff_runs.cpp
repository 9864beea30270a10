// diff.hpp: the comparison itself — bitwise row comparison of the experiment columns, loss gap,
// per-tensor ULP / fraction / relative-L2 distances of shared parameter states, the whole-model
// distance curve with its growth, and the prediction agreement of each shared state. The distances
// are reported numbers, computed in fp64 in ascending element order (the same answer everywhere).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

// The float line as integers: negative floats below zero, ±0 → 0, monotonic in value.
int64_t ordered(uint32_t bits) { return (bits & 0x80000000u) ? -int64_t(bits & 0x7fffffffu) : int64_t(bits); }

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// The parameters of `run` after `step`: its snapshot, or its final state.  Returns (flat_size).
std::vector<float> state_weights(const run::RunReader& run, const StateDistance& state) {
  return state.source == "snapshot" ? run.read_snapshot(state.step) : run.read_final_state().weights;
}

// d.agreement at every shared state, on run A's recorded experiment. When that cannot be done here
// (a config this samebits does not parse, validation data files not found from this directory)
// the comparison goes on without it and d.agreement_note says why.
void add_agreement(const run::RunReader& a, const run::RunReader& b, const DiffOptions& options, RunDiff& d) {
  try {
    AgreementProbe probe(recorded_config(a), options.agreement_sequences);
    for (const StateDistance& st : d.states) {
      d.agreement.push_back(probe.compare(state_weights(a, st), state_weights(b, st), st.step, st.source));
    }
  } catch (const Error& e) {
    d.agreement.clear();
    d.agreement_note = std::string("skipped: ") + e.what();
  }
}

}  // namespace

uint64_t ulp_distance(float a, float b) {
  const uint32_t ua = bits_of(a), ub = bits_of(b);
  if (ua == ub) return 0;
  if (std::isnan(a) || std::isnan(b)) return kUlpNaN;
  const int64_t d = ordered(ua) - ordered(ub);
  return uint64_t(d < 0 ? -d : d);
}

TensorDistance tensor_distance(const std::string& name, std::span<const float> a, std::span<const float> b) {
  SB_CHECK(a.size() == b.size(), "tensor ", name, ": ", a.size(), " and ", b.size(), " values cannot be compared");
  TensorDistance t;
  t.tensor = name;
  t.numel = a.size();
  double diff_sq = 0, norm_sq = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    norm_sq += x * x;
    if (bits_of(a[i]) == bits_of(b[i])) continue;
    if (t.first_differing < 0) t.first_differing = int64_t(i);
    ++t.differing;
    t.max_ulp = std::max(t.max_ulp, ulp_distance(a[i], b[i]));
    diff_sq += (x - y) * (x - y);
  }
  if (t.differing == 0) t.rel_l2 = 0;
  else if (norm_sq == 0) t.rel_l2 = diff_sq == 0 ? 0 : std::numeric_limits<double>::infinity();
  else t.rel_l2 = std::sqrt(diff_sq) / std::sqrt(norm_sq);
  return t;
}

DistancePoint distance_point(const StateDistance& s) {
  DistancePoint p;
  p.step = s.step;
  p.rel_l2 = s.rel_l2;
  uint64_t numel = 0, differing = 0;
  for (const TensorDistance& t : s.tensors) {
    numel += t.numel;
    differing += t.differing;
    p.max_ulp = std::max(p.max_ulp, t.max_ulp);
  }
  p.differing_fraction = numel ? double(differing) / double(numel) : 0.0;
  return p;
}

uint64_t StateDistance::differing_tensors() const {
  return uint64_t(std::count_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.differing > 0; }));
}

StateDistance state_distance(int64_t step, std::string source, const std::vector<run::TensorInfo>& tensors,
                             std::span<const float> a, std::span<const float> b) {
  StateDistance s;
  s.step = step;
  s.source = std::move(source);
  double diff_sq = 0, norm_sq = 0;
  for (const run::TensorInfo& t : tensors) {
    const auto ta = a.subspan(t.offset, t.numel), tb = b.subspan(t.offset, t.numel);
    s.tensors.push_back(tensor_distance(t.name, ta, tb));
    for (std::size_t i = 0; i < t.numel; ++i) {
      const double x = ta[i], y = tb[i];
      norm_sq += x * x;
      diff_sq += (x - y) * (x - y);
    }
  }
  s.rel_l2 = s.differing_tensors() == 0 ? 0
             : norm_sq == 0             ? std::numeric_limits<double>::infinity()
                                        : std::sqrt(diff_sq) / std::sqrt(norm_sq);
  return s;
}

bool RunDiff::identical() const {
  return same_layout && a.steps == b.steps && first_divergent_step == 0 &&
         std::all_of(states.begin(), states.end(), [](const auto& s) { return s.differing_tensors() == 0; });
}

RunDiff diff_runs(const run::RunReader& a, const run::RunReader& b, const DiffOptions& options) {
  RunDiff d;
  for (auto [side, run] : {std::pair{&d.a, &a}, std::pair{&d.b, &b}}) {
    side->path = run->path();
    side->experiment_id = run->info().experiment_id;
    side->status = std::string(to_string(run->info().status));
    side->backend = run->info().execution.backend;
    side->steps = run->steps_recorded();
  }
  d.same_experiment = d.a.experiment_id == d.b.experiment_id;
  d.experiment_differences = experiment_field_differences(a.info().experiment_text, b.info().experiment_text);
  d.same_layout = a.tensors() == b.tensors();
  d.compared_steps = std::min(d.a.steps, d.b.steps);
  const auto n = uint64_t(d.compared_steps);

  // The first row where any experiment column differs; per-tensor columns need equal layouts. A
  // column one run records and the other does not (QK-clip's), or of other widths, differs at once.
  std::map<std::string, int64_t> first_row;  // column → first differing row
  for (const run::SeriesColumn& c : run::series_columns()) {
    if (!c.experiment || (c.width == run::Width::tensors && !d.same_layout)) continue;
    const bool in_a = run::column_recorded(c, a.shape()), in_b = run::column_recorded(c, b.shape());
    if (!in_a && !in_b) continue;
    if (in_a != in_b || run::column_values(c, a.shape()) != run::column_values(c, b.shape())) {
      if (n > 0) first_row[std::string(c.path)] = 0;
      continue;
    }
    const std::vector<std::byte> va = a.series_bytes(c), vb = b.series_bytes(c);
    const std::size_t row = run::column_values(c, a.shape()) * dtype_bytes(c.dtype);
    for (uint64_t r = 0; r < n; ++r) {
      if (std::memcmp(va.data() + r * row, vb.data() + r * row, row) != 0) {
        first_row[std::string(c.path)] = int64_t(r);
        break;
      }
    }
  }
  if (!first_row.empty()) {
    int64_t first = std::numeric_limits<int64_t>::max();
    for (const auto& [column, r] : first_row) first = std::min(first, r);
    d.first_divergent_step = first + 1;
    for (const run::SeriesColumn& c : run::series_columns()) {
      const auto it = first_row.find(std::string(c.path));
      if (it != first_row.end() && it->second == first) d.divergent_columns.emplace_back(c.path);
    }
    if (d.same_layout) {
      for (auto [column, names] : {std::pair{"series/param_fingerprint", &d.divergent_params},
                                   std::pair{"series/grad_fingerprint", &d.divergent_grads}}) {
        const auto fa = a.series_rows<uint64_t>(column, uint64_t(first), 1);
        const auto fb = b.series_rows<uint64_t>(column, uint64_t(first), 1);
        for (std::size_t t = 0; t < fa.size(); ++t) {
          if (fa[t] != fb[t]) names->push_back(a.tensors()[t].name);
        }
      }
    }
  }

  const auto la = a.series<float>("series/loss"), lb = b.series<float>("series/loss");
  d.loss_a.assign(la.begin(), la.begin() + int64_t(n));
  d.loss_b.assign(lb.begin(), lb.begin() + int64_t(n));
  for (uint64_t r = 0; r < n; ++r) d.loss_gap.push_back(std::fabs(double(la[r]) - double(lb[r])));

  if (d.same_layout) {
    const auto sa = a.snapshot_steps(), sb = b.snapshot_steps();
    for (int64_t step : sa) {
      if (std::binary_search(sb.begin(), sb.end(), step)) {
        d.states.push_back(state_distance(step, "snapshot", a.tensors(), a.read_snapshot(step), b.read_snapshot(step)));
      }
    }
    // The final states, unless a snapshot of the same step was compared.
    if (a.has_final_state() && b.has_final_state() && d.a.steps == d.b.steps &&
        (d.states.empty() || d.states.back().step != d.a.steps)) {
      const TrainerState fa = a.read_final_state(), fb = b.read_final_state();
      d.states.push_back(state_distance(fa.step, "final state", a.tensors(), fa.weights, fb.weights));
    }
  }

  for (const StateDistance& st : d.states) d.distance.push_back(distance_point(st));
  d.growth = distance_growth(d.distance, d.first_divergent_step, options.threshold);
  if (options.agreement && !d.states.empty()) add_agreement(a, b, options, d);
  return d;
}

}  // namespace sb::cli
