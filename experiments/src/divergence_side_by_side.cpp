// divergence.hpp: side_by_side — two Trainers in one process, stepped alternately, their weights
// compared every `every` steps — and its text and JSON reports. Determinism: each Trainer keeps
// its contract (its bits do not depend on the other sharing the process or the threads); the
// distances are divergence_curve.cpp's fp64 sums.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "samebits/cli/divergence.hpp"
#include "samebits/cli/json.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Whether two trainers' steps recorded different bits.
bool steps_differ(const StepResult& a, const StepResult& b) {
  return !same_bits(a.stats.loss, b.stats.loss) || !same_bits(a.stats.grad_norm, b.stats.grad_norm) ||
         a.stats.skipped != b.stats.skipped || !same_bits(a.param_fingerprints, b.param_fingerprints) ||
         !same_bits(a.grad_fingerprints, b.grad_fingerprints);
}

// The trainer's weights.  Returns (flat_size) host memory (the CPU backend's own buffer).
std::span<const float> weights(Trainer& t) { return {t.model().weights().data_as<float>(), t.model().flat_size()}; }

// (steps) |loss_a − loss_b| in fp64.
std::vector<double> loss_gaps(const SideBySide& s) {
  std::vector<double> out;
  for (std::size_t i = 0; i < s.loss_a.size(); ++i) out.push_back(std::fabs(double(s.loss_a[i]) - double(s.loss_b[i])));
  return out;
}

}  // namespace

bool SideBySide::identical() const {
  return first_divergent_step == 0 && std::all_of(distance.begin(), distance.end(), [](const DistancePoint& p) {
           return p.rel_l2 == 0 && p.max_ulp == 0;
         });
}

SideBySide side_by_side(const Config& a, const Config& b, int64_t steps, int64_t every,
                        const SideBySideOptions& options) {
  SB_CHECK(steps >= 0, "side by side: ", steps, " steps; use 0 (A's train.steps) or a positive number");
  const int64_t n = steps > 0 ? steps : a.train.steps;
  SB_CHECK(n <= a.train.steps && n <= b.train.steps, "side by side: ", n, " steps, but A's train.steps is ",
           a.train.steps, " and B's ", b.train.steps, "; choose --steps at most the smaller");
  SB_CHECK(every >= 1, "side by side: a distance point every ", every, " steps; use 1 or more");
  const std::vector<run::TensorInfo> tensors = run::tensor_infos(a.model);
  SB_CHECK(tensors == run::tensor_infos(b.model),
           "side by side: the two configs' models have different tensor "
           "tables (model.* differs), so their parameters cannot be compared; keep [model] equal");

  SideBySide s;
  s.experiment_a = experiment_id(a);
  s.experiment_b = experiment_id(b);
  s.experiment_differences = experiment_field_differences(experiment_text(a), experiment_text(b));
  s.steps = n;
  s.every = every;
  TrainerOptions options_a, options_b;
  options_a.statistics = options_b.statistics = false;  // not compared; fingerprints and losses are
  const std::vector<float> init_a = io::load_initial_weights(a), init_b = io::load_initial_weights(b);
  if (!a.train.init.empty()) options_a.initial_weights = &init_a;
  if (!b.train.init.empty()) options_b.initial_weights = &init_b;
  Trainer ta(a, options_a);
  Trainer tb(b, options_b);
  s.distance.push_back(distance_point(0, tensors, weights(ta), weights(tb)));
  if (options.progress) options.progress(0, NAN, NAN, &s.distance.back());
  for (int64_t k = 1; k <= n; ++k) {
    const StepResult ra = ta.step();
    const StepResult rb = tb.step();
    s.loss_a.push_back(ra.stats.loss);
    s.loss_b.push_back(rb.stats.loss);
    if (s.first_divergent_step == 0 && steps_differ(ra, rb)) s.first_divergent_step = k;
    const bool point = k % every == 0 || k == n;
    if (point) s.distance.push_back(distance_point(k, tensors, weights(ta), weights(tb)));
    if (options.progress) options.progress(k, ra.stats.loss, rb.stats.loss, point ? &s.distance.back() : nullptr);
  }
  s.growth = distance_growth(s.distance, s.first_divergent_step, options.threshold);
  if (options.agreement) {
    AgreementProbe probe(a, options.agreement_sequences);
    s.agreement = probe.compare(weights(ta), weights(tb), n, "side by side");
  }
  return s;
}

std::string side_by_side_text(const SideBySide& s) {
  std::ostringstream o;
  o << "A  experiment " << s.experiment_a << "\nB  experiment " << s.experiment_b << "\n";
  o << "experiment   " << (s.experiment_a == s.experiment_b ? "same (" + s.experiment_a + ")" : "DIFFERENT");
  if (!s.experiment_differences.empty()) {
    o << ": " << s.experiment_differences.size() << " field(s) differ";
    for (const auto& f : s.experiment_differences) o << "\n               " << f;
  }
  o << "\nsteps        " << s.steps << " side by side, distance every " << s.every << "\n";
  if (s.first_divergent_step > 0) {
    o << "first divergent step " << s.first_divergent_step << "\n";
    o << loss_gap_text(loss_gaps(s));
    o << "final loss   " << fmt("%.6f", s.loss_a.back()) << " | " << fmt("%.6f", s.loss_b.back()) << "\n";
  }
  o << distance_text(s.distance, s.growth);
  if (s.agreement) o << agreement_text(*s.agreement);
  o << "result       "
    << (s.identical()                ? "IDENTICAL: every step's loss, fingerprints and weights are bitwise equal"
        : s.first_divergent_step > 0 ? "DIFFERENT: first divergent step " + std::to_string(s.first_divergent_step)
                                     : std::string("DIFFERENT: the weights differ"))
    << "\n";
  return o.str();
}

std::string side_by_side_json(const SideBySide& s) {
  std::ostringstream o;
  const auto list = [&](const char* key, const std::vector<float>& v) {
    o << "  \"" << key << "\": [";
    for (std::size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << json_number(v[i]);
    o << "],\n";
  };
  o << "{\n  \"mode\": \"side_by_side\",\n";
  o << "  \"a\": {\"experiment_id\": " << json_string(s.experiment_a) << "},\n";
  o << "  \"b\": {\"experiment_id\": " << json_string(s.experiment_b) << "},\n";
  o << "  \"identical\": " << (s.identical() ? "true" : "false") << ",\n";
  o << "  \"same_experiment\": " << (s.experiment_a == s.experiment_b ? "true" : "false") << ",\n";
  o << "  \"experiment_differences\": [";
  for (std::size_t i = 0; i < s.experiment_differences.size(); ++i) {
    o << (i ? ", " : "") << json_string(s.experiment_differences[i]);
  }
  o << "],\n  \"steps\": " << s.steps << ",\n  \"every\": " << s.every << ",\n";
  o << "  \"first_divergent_step\": " << (s.first_divergent_step > 0 ? std::to_string(s.first_divergent_step) : "null")
    << ",\n";
  list("loss_a", s.loss_a);
  list("loss_b", s.loss_b);
  const std::vector<double> gaps = loss_gaps(s);
  o << "  \"loss_gap\": [";
  for (std::size_t i = 0; i < gaps.size(); ++i) o << (i ? ", " : "") << json_number(gaps[i]);
  o << "],\n  \"distance\": [";
  for (std::size_t i = 0; i < s.distance.size(); ++i) o << (i ? ",\n    " : "\n    ") << distance_json(s.distance[i]);
  o << "\n  ],\n  \"growth\": " << growth_json(s.growth) << ",\n";
  o << "  \"agreement\": " << (s.agreement ? agreement_json(*s.agreement) : "null") << "\n}\n";
  return o.str();
}

}  // namespace sb::cli
