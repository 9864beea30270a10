// diff.hpp: the text and JSON forms of a RunDiff (what `samebits diff [--json]` prints); the
// distance curve, growth and agreement parts are divergence.hpp's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/json.hpp"
#include "samebits/core/untrusted_text.hpp"

namespace sb::cli {
namespace {

std::string ulp_text(uint64_t ulp) { return ulp == kUlpNaN ? "NaN" : std::to_string(ulp); }

// "a, b, c + 5 more".
std::string name_list(const std::vector<std::string>& names, std::size_t shown = 8) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " + " + std::to_string(names.size() - shown) + " more";
  return out;
}

// Steps for the loss table: the first divergent step, then evenly spaced to the last.
std::vector<int64_t> table_steps(int64_t first, int64_t last) {
  std::vector<int64_t> out;
  for (int k = 0; k <= 5; ++k) {
    const int64_t s = first + (last - first) * k / 5;
    if (out.empty() || out.back() != s) out.push_back(s);
  }
  return out;
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_string(v[i]);
  return out + "]";
}

std::string json_side(const RunSide& s) {
  return "{\"path\": " + json_string(s.path) + ", \"experiment_id\": " + json_string(s.experiment_id) +
         ", \"status\": " + json_string(s.status) + ", \"steps\": " + std::to_string(s.steps) +
         ", \"backend\": " + json_string(s.backend) + "}";
}

}  // namespace

std::string diff_text(const RunDiff& d) {
  std::ostringstream s;
  for (const auto& [label, side] : {std::pair{"A", &d.a}, std::pair{"B", &d.b}}) {
    s << label << "  " << side->path << ": experiment " << escape_untrusted(side->experiment_id) << ", " << side->status
      << ", " << side->steps << " steps, " << escape_untrusted(side->backend) << "\n";
  }
  s << "experiment   " << (d.same_experiment ? "same (" + escape_untrusted(d.a.experiment_id) + ")" : "DIFFERENT");
  if (!d.experiment_differences.empty()) {
    s << (d.same_experiment ? "; " : ": ") << d.experiment_differences.size() << " field(s) differ";
    for (const auto& f : d.experiment_differences) s << "\n               " << escape_untrusted(f);
  }
  s << "\n";
  if (!d.same_layout) s << "layout       the tensor tables differ: per-tensor comparisons skipped\n";
  s << "steps        " << d.compared_steps << " compared (A " << d.a.steps << ", B " << d.b.steps << ")\n";
  if (d.first_divergent_step > 0) {
    s << "first divergent step " << d.first_divergent_step << "\n";
    s << "  columns    " << name_list(d.divergent_columns) << "\n";
    if (!d.divergent_grads.empty()) {
      s << "  gradients  " << d.divergent_grads.size() << " tensor(s): " << name_list(d.divergent_grads) << "\n";
    }
    if (!d.divergent_params.empty()) {
      s << "  parameters " << d.divergent_params.size() << " tensor(s): " << name_list(d.divergent_params) << "\n";
    }
    s << loss_gap_text(d.loss_gap);
    s << "  step        loss A        loss B         |gap|\n";
    for (int64_t step : table_steps(d.first_divergent_step, d.compared_steps)) {
      const auto i = std::size_t(step - 1);
      s << fmt("%6.0f", double(step)) << fmt("  %12.7f", d.loss_a[i]) << fmt("  %12.7f", d.loss_b[i])
        << fmt("  %12.3g", d.loss_gap[i]) << "\n";
    }
  }
  for (const StateDistance& st : d.states) {
    s << "parameters at step " << st.step << " (" << st.source << "): ";
    if (st.differing_tensors() == 0) {
      s << "all " << st.tensors.size() << " tensors bitwise identical\n";
      continue;
    }
    s << st.differing_tensors() << " of " << st.tensors.size() << " tensors differ, relative L2 "
      << fmt("%.3g", st.rel_l2) << "\n";
    s << "  tensor                    differing     max ULP      rel L2\n";
    for (const TensorDistance& t : st.tensors) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-24s %9.3f%% %11s %11.3g\n", t.tensor.c_str(), 100.0 * t.fraction(),
                    ulp_text(t.max_ulp).c_str(), t.rel_l2);
      s << line;
    }
  }
  const bool states_differ =
      std::any_of(d.states.begin(), d.states.end(), [](const StateDistance& st) { return st.differing_tensors() > 0; });
  if (states_differ) {
    s << distance_text(d.distance, d.growth);
    if (!d.agreement.empty()) s << agreement_text(d.agreement.back());
    if (!d.agreement_note.empty()) s << "predictions  " << escape_untrusted(d.agreement_note) << "\n";
  }
  if (d.identical()) {
    s << "result       IDENTICAL: every recorded bit of " << d.compared_steps << " steps is equal\n";
  } else if (d.first_divergent_step > 0) {
    s << "result       DIFFERENT: first divergent step " << d.first_divergent_step << "\n";
  } else {
    s << "result       DIFFERENT: "
      << (d.a.steps != d.b.steps ? "the runs recorded different numbers of steps (equal where both have them)"
          : !d.same_layout       ? "the tensor tables differ"
                                 : "the stored parameters differ")
      << "\n";
  }
  return s.str();
}

std::string diff_json(const RunDiff& d) {
  std::ostringstream s;
  s << "{\n  \"a\": " << json_side(d.a) << ",\n  \"b\": " << json_side(d.b) << ",\n";
  s << "  \"identical\": " << (d.identical() ? "true" : "false") << ",\n";
  s << "  \"same_experiment\": " << (d.same_experiment ? "true" : "false") << ",\n";
  s << "  \"experiment_differences\": " << json_strings(d.experiment_differences) << ",\n";
  s << "  \"same_layout\": " << (d.same_layout ? "true" : "false") << ",\n";
  s << "  \"compared_steps\": " << d.compared_steps << ",\n";
  s << "  \"first_divergent_step\": " << (d.first_divergent_step > 0 ? std::to_string(d.first_divergent_step) : "null")
    << ",\n";
  s << "  \"divergent_columns\": " << json_strings(d.divergent_columns) << ",\n";
  s << "  \"divergent_params\": " << json_strings(d.divergent_params) << ",\n";
  s << "  \"divergent_grads\": " << json_strings(d.divergent_grads) << ",\n";
  s << "  \"loss_gap\": [";
  for (std::size_t i = 0; i < d.loss_gap.size(); ++i) s << (i ? ", " : "") << json_number(d.loss_gap[i]);
  s << "],\n  \"states\": [";
  for (std::size_t k = 0; k < d.states.size(); ++k) {
    const StateDistance& st = d.states[k];
    s << (k ? "," : "") << "\n    {\"step\": " << st.step << ", \"source\": " << json_string(st.source)
      << ", \"rel_l2\": " << json_number(st.rel_l2) << ", \"tensors\": [";
    for (std::size_t t = 0; t < st.tensors.size(); ++t) {
      const TensorDistance& x = st.tensors[t];
      s << (t ? ", " : "") << "{\"name\": " << json_string(x.tensor) << ", \"numel\": " << x.numel
        << ", \"differing\": " << x.differing
        << ", \"max_ulp\": " << (x.max_ulp == kUlpNaN ? "null" : std::to_string(x.max_ulp))
        << ", \"rel_l2\": " << json_number(x.rel_l2) << "}";
    }
    s << "]}";
  }
  s << (d.states.empty() ? "],\n" : "\n  ],\n");
  s << "  \"distance\": [";
  for (std::size_t k = 0; k < d.distance.size(); ++k) s << (k ? ",\n    " : "\n    ") << distance_json(d.distance[k]);
  s << (d.distance.empty() ? "],\n" : "\n  ],\n");
  s << "  \"growth\": " << growth_json(d.growth) << ",\n";
  s << "  \"agreement\": [";
  for (std::size_t k = 0; k < d.agreement.size(); ++k)
    s << (k ? ",\n    " : "\n    ") << agreement_json(d.agreement[k]);
  s << (d.agreement.empty() ? "],\n" : "\n  ],\n");
  s << "  \"agreement_note\": " << (d.agreement_note.empty() ? "null" : json_string(d.agreement_note)) << "\n}\n";
  return s.str();
}

}  // namespace sb::cli
