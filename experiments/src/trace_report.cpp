// trace.hpp: what `samebits trace` prints and writes — the traced step and where its state came
// from, the origin (the first differing op, its kind, ULP distance and differing fraction), and the
// propagation op by op after it; report.md holds the whole propagation table (one row per
// differing op) and a text bar of each op's relative L2 distance; propagation.tsv the same table
// for samebits.analysis (python/samebits/analysis/tracefile.py).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "samebits/cli/divergence.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/core/tensor.hpp"
#include "samebits/core/untrusted_text.hpp"

namespace sb::cli {
namespace {

std::string ulp_text(uint64_t ulp) { return ulp == kUlpNaN ? "NaN" : std::to_string(ulp); }

std::string number(double x) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3g", x);
  return t;
}

std::string leaf_text(const trace::Row& row) { return row.leaf < 0 ? "-" : std::to_string(row.leaf); }

const RowDistance* origin_distance(const TraceResult& r) {
  const StreamComparison& c = r.comparison;
  return !c.alignment && !c.propagation.empty() && c.origin && c.propagation.front().row == *c.origin
             ? &c.propagation.front()
             : nullptr;
}

// The origin's paragraph (without a trailing newline).
std::string origin_text(const TraceResult& r) {
  const StreamComparison& c = r.comparison;
  std::ostringstream s;
  if (!c.origin && c.alignment) {
    s << "every aligned op equal: " << c.alignment->pairs.size() << " ops of step " << r.step
      << " run in both have bitwise equal inputs and outputs";
    if (r.first_divergent_step > 0)
      s << "; the runs still differ at step " << r.first_divergent_step << ": the difference is outside the traced ops";
    return s.str();
  }
  if (!c.origin) {
    s << "every op equal: " << c.rows_a << " ops of step " << r.step << " have bitwise equal inputs and outputs";
    if (r.first_divergent_step > 0)
      s << "; the runs still differ at step " << r.first_divergent_step
        << ": the difference is outside the traced ops (the host-side loss or statistics)";
    return s.str();
  }
  const size_t i = *c.origin;
  if (c.origin_kind == "sequence") {
    s << "the op sequences part at op " << i << ": A runs "
      << (i < r.a.size() ? escape_untrusted(r.a[i].name()) : std::string("nothing more")) << ", B runs "
      << (i < r.b.size() ? escape_untrusted(r.b[i].name()) : std::string("nothing more"))
      << " (another dtype path or op order)";
    return s.str();
  }
  const trace::Row& row = r.a[i];
  s << "origin: op " << i << " of " << c.rows_a << ", " << escape_untrusted(row.name()) << " (leaf " << leaf_text(row)
    << ", output " << shape_string(row.shape) << ")\n";
  const bool precisions = std::any_of(r.differences.begin(), r.differences.end(),
                                      [](const std::string& d) { return d.rfind("train.precision", 0) == 0; });
  if (c.alignment) s << "  (B's op " << c.origin_b << " of " << c.rows_b << ")\n";
  if (c.origin_kind == "op") {
    s << "  its inputs are bitwise equal in both runs; its output differs";
    if (precisions) s << ": the runs' precisions differ, so this is the first op whose dtype path differs";
  } else if (c.alignment) {
    s << "  its inputs differ on entry and no earlier aligned op wrote them differently:";
    for (const std::string& source : c.input_sources) s << "\n  " << escape_untrusted(source);
  } else {
    s << "  input";
    for (size_t k : c.differing_inputs) s << " " << k;
    s << " differs on entry, and no earlier op wrote it differently: this op is the first reader of a "
         "tensor changed outside the traced ops (a perturbation, or the state)";
  }
  if (const RowDistance* d = origin_distance(r)) {
    s << "\n  output: " << number(100 * d->differing_fraction) << "% of elements differ, max " << ulp_text(d->max_ulp)
      << " ULP, relative L2 " << number(d->rel_l2);
  }
  return s.str();
}

// Aligned streams: how many ops matched, and the first `rows` of those only one stream runs.
std::string alignment_text(const TraceResult& r, size_t rows) {
  const StreamAlignment& al = *r.comparison.alignment;
  std::ostringstream s;
  s << "alignment: " << al.pairs.size() << " ops aligned (" << al.reordered.size() << " of them reordered), "
    << al.dropped.size() << " only in A (dropped), " << al.inserted.size() << " only in B (inserted)\n";
  for (auto [sign, list, stream] : {std::tuple{'-', &al.dropped, &r.a}, std::tuple{'+', &al.inserted, &r.b}}) {
    for (size_t k = 0; k < list->size() && k < rows; ++k) {
      const trace::Row& row = (*stream)[(*list)[k]];
      s << "  " << sign << " " << (sign == '-' ? "A " : "B ") << (*list)[k] << "  " << escape_untrusted(row.name())
        << " " << shape_string(row.shape) << "\n";
    }
    if (list->size() > rows) s << "  " << sign << " … " << list->size() - rows << " more (report.md)\n";
  }
  return s.str();
}

}  // namespace

std::string trace_text(const TraceResult& r, size_t propagation_rows) {
  std::ostringstream s;
  s << "trace " << r.path_a << " vs " << r.path_b << " (experiment " << r.experiment_id << ")\n";
  for (const std::string& d : r.differences) s << "  differs     " << escape_untrusted(d) << "\n";
  s << "  A           " << r.setup_a << "\n  B           " << r.setup_b << "\n";
  s << "  divergence  "
    << (r.first_divergent_step > 0 ? "first divergent step " + std::to_string(r.first_divergent_step)
                                   : std::string("none: the recorded runs are identical"))
    << "\n  traced      step " << r.step << " from " << escape_untrusted(r.state_source) << "; " << r.comparison.rows_a
    << " ops in A, " << r.comparison.rows_b << " in B\n";
  s << origin_text(r) << "\n";
  if (r.comparison.alignment) s << alignment_text(r, propagation_rows);
  const auto& p = r.comparison.propagation;
  if (p.size() > 1 && r.comparison.alignment) {
    s << "propagation: " << p.size() << " aligned ops with differing outputs from the origin on (recorded streams "
      << "hold hashes, not values: no distances)\n";
    for (size_t k = 0; k < p.size() && k < propagation_rows; ++k)
      s << "  " << p[k].row << "  " << escape_untrusted(r.a[p[k].row].name()) << "\n";
    if (p.size() > propagation_rows) s << "  … " << p.size() - propagation_rows << " more (report.md)\n";
  } else if (p.size() > 1) {
    s << "propagation: " << p.size() << " ops with differing outputs from the origin on\n";
    for (size_t k = 0; k < p.size() && k < propagation_rows; ++k) {
      const trace::Row& row = r.a[p[k].row];
      char line[64];
      std::snprintf(line, sizeof line, "  %6zu  %8s  %10s  %9s  ", p[k].row, number(p[k].differing_fraction).c_str(),
                    ulp_text(p[k].max_ulp).c_str(), number(p[k].rel_l2).c_str());
      s << line << "leaf " << leaf_text(row) << "  " << escape_untrusted(row.name()) << "\n";
    }
    if (p.size() > propagation_rows) s << "  … " << p.size() - propagation_rows << " more (report.md)\n";
  }
  return s.str();
}

std::string trace_markdown(const TraceResult& r) {
  std::ostringstream s;
  s << "# samebits trace: step " << r.step << "\n\n";
  s << "- A: `" << r.path_a << "` (" << r.setup_a << ")\n- B: `" << r.path_b << "` (" << r.setup_b << ")\n";
  s << "- experiment " << r.experiment_id;
  for (const std::string& d : r.differences) s << "; differs in `" << escape_untrusted(d) << "`";
  s << "\n- state after step " << r.step - 1 << ": " << escape_untrusted(r.state_source) << "\n\n";
  s << "## Origin\n\n" << origin_text(r) << "\n\n";
  if (r.comparison.alignment) s << "## Alignment\n\n```\n" << alignment_text(r, size_t(-1)) << "```\n\n";
  const auto& p = r.comparison.propagation;
  if (p.empty()) return s.str();
  s << "## Propagation\n\nEvery op of the step whose output differs, from the origin on. `rel L2` drawn as a bar "
       "on a log axis (one `#` per decade above 1e-12).\n\n";
  s << "| op | leaf | site and op | output | differing | max ULP | rel L2 | "
       "|\n|---:|---:|---|---|---:|---:|---:|---|\n";
  for (const RowDistance& d : p) {
    const trace::Row& row = r.a[d.row];
    const int bars = d.rel_l2 > 0 ? std::max(1, int(std::lround(std::log10(d.rel_l2) + 12))) : 0;
    s << "| " << d.row << " | " << leaf_text(row) << " | " << escape_untrusted(row.name()) << " | "
      << shape_string(row.shape) << " | " << number(d.differing_fraction) << " | " << ulp_text(d.max_ulp) << " | "
      << number(d.rel_l2) << " | " << std::string(size_t(std::min(bars, 14)), '#') << " |\n";
  }
  return s.str();
}

std::string trace_tsv(const TraceResult& r) {
  std::ostringstream s;
  s << "op\tleaf\tsite\top_name\tdiffering_fraction\tmax_ulp\trel_l2\n";
  for (const RowDistance& d : r.comparison.propagation) {
    const trace::Row& row = r.a[d.row];
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "%.9g\t%s\t%.9g", d.differing_fraction,
                  d.max_ulp == kUlpNaN ? "nan" : std::to_string(d.max_ulp).c_str(), d.rel_l2);
    s << d.row << "\t" << row.leaf << "\t" << escape_untrusted(row.site) << "\t" << escape_untrusted(row.op) << "\t"
      << numbers << "\n";
  }
  return s.str();
}

}  // namespace sb::cli
