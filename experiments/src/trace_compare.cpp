// trace.hpp: two op-hash streams compared row by row — the origin (the first row whose inputs or
// outputs differ, and why) and, from there on, each differing row's distance (the fraction of
// differing elements, max ULP and relative L2 of its outputs, diff.hpp tensor_distance).
#include <cstring>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/trace.hpp"

namespace sb::cli {
namespace {

bool same_op(const trace::Row& a, const trace::Row& b) {
  return a.site == b.site && a.op == b.op && a.leaf == b.leaf && a.shape == b.shape &&
         a.inputs.size() == b.inputs.size() && a.output_numel == b.output_numel;
}

RowDistance row_distance(size_t row, const trace::Row& a, const trace::Row& b) {
  RowDistance d;
  d.row = row;
  if (a.values.size() != b.values.size() || a.values.empty()) {
    d.differing_fraction = 1;
    return d;
  }
  std::vector<float> x(a.values.size()), y(b.values.size());
  std::memcpy(x.data(), a.values.data(), x.size() * sizeof(float));
  std::memcpy(y.data(), b.values.data(), y.size() * sizeof(float));
  const TensorDistance t = tensor_distance(a.name(), x, y);
  d.differing_fraction = t.fraction();
  d.max_ulp = t.max_ulp;
  d.rel_l2 = t.rel_l2;
  return d;
}

}  // namespace

StreamComparison compare_streams(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b) {
  StreamComparison c;
  c.rows_a = a.size();
  c.rows_b = b.size();
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (!c.origin) {
      if (!same_op(a[i], b[i])) {
        c.origin = i;
        c.origin_kind = "sequence";
        return c;  // the rows no longer line up: nothing after is comparable
      }
      for (size_t k = 0; k < a[i].inputs.size(); ++k)
        if (a[i].inputs[k] != b[i].inputs[k]) c.differing_inputs.push_back(k);
      if (c.differing_inputs.empty() && a[i].outputs == b[i].outputs) continue;
      c.origin = i;
      c.origin_kind = c.differing_inputs.empty() ? "op" : "input";
    } else if (!same_op(a[i], b[i])) {
      break;  // the op sequences part after the origin (a data-dependent branch): stop there
    }
    if (a[i].outputs != b[i].outputs) c.propagation.push_back(row_distance(i, a[i], b[i]));
  }
  if (!c.origin && a.size() != b.size()) {
    c.origin = n;
    c.origin_kind = "sequence";
  }
  return c;
}

}  // namespace sb::cli
