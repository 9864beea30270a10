// trace.hpp: two recorded op streams of different lengths (programs samebits cannot replay, such
// as samebits.torch's) aligned and compared. Rows match by their op key (site, op, shape, input
// and output counts) along a longest common subsequence (Myers' O((N+M)·D) diff, Myers 1986);
// rows left over are paired by key in order (the key holds the site: a reordering within a
// module); the rest are dropped (only in A) or inserted (only in B). The origin is the first
// aligned pair whose inputs or outputs differ. Deterministic: a function of the two streams only.
#include <algorithm>
#include <cstdint>
#include <string>

#include "samebits/cli/trace.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::cli {
namespace {

// Edits Myers' search may take before giving up (its memory grows as the square of the edits).
constexpr int64_t kMaxEdits = 6000;

uint64_t op_key(const trace::Row& r) {
  std::string k =
      r.site + '\n' + r.op + '\n' + std::to_string(r.inputs.size()) + ' ' + std::to_string(r.outputs.size());
  for (int64_t d : r.shape) k += ' ' + std::to_string(d);
  return det::fingerprint(k.data(), k.size());
}

// The matched (x, y) index pairs of a longest common subsequence of x and y, ascending.
std::vector<std::pair<size_t, size_t>> common_subsequence(const std::vector<uint64_t>& x,
                                                          const std::vector<uint64_t>& y) {
  const int64_t n = int64_t(x.size()), m = int64_t(y.size());
  // rounds[d]: V (the furthest x on each diagonal k) at the start of round d, for k in [-d-1, d+1].
  std::vector<std::vector<int64_t>> rounds;
  std::vector<int64_t> v(size_t(2 * (n + m) + 3), 0);
  const int64_t mid = n + m + 1;
  int64_t last = -1;
  for (int64_t d = 0; d <= n + m && last < 0; ++d) {
    SB_CHECK(d <= kMaxEdits, "samebits trace: the op streams differ in more than ", kMaxEdits,
             " inserted or dropped ops; they do not align (trace a step whose configurations are closer)");
    rounds.emplace_back(v.begin() + (mid - d - 1), v.begin() + (mid + d + 2));
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t i = k == -d || (k != d && v[size_t(mid + k - 1)] < v[size_t(mid + k + 1)]) ? v[size_t(mid + k + 1)]
                                                                                         : v[size_t(mid + k - 1)] + 1;
      int64_t j = i - k;
      while (i < n && j < m && x[size_t(i)] == y[size_t(j)]) ++i, ++j;
      v[size_t(mid + k)] = i;
      if (i >= n && j >= m) last = d;
    }
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  int64_t i = n, j = m;
  for (int64_t d = last; d >= 0; --d) {
    const std::vector<int64_t>& r = rounds[size_t(d)];  // r[k + d + 1] = V[k]
    const auto at = [&](int64_t k) { return r[size_t(k + d + 1)]; };
    const int64_t k = i - j;
    const int64_t prev_k = k == -d || (k != d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const int64_t prev_i = d == 0 ? 0 : at(prev_k), prev_j = d == 0 ? 0 : prev_i - prev_k;
    while (i > prev_i && j > prev_j) pairs.emplace_back(size_t(--i), size_t(--j));
    i = prev_i;
    j = prev_j;
  }
  std::reverse(pairs.begin(), pairs.end());
  return pairs;
}

// The latest row before `before` whose outputs hold `hash` (rows.size(): none).
size_t producer(const std::vector<trace::Row>& rows, size_t before, uint64_t hash) {
  for (size_t r = before; r-- > 0;)
    if (std::find(rows[r].outputs.begin(), rows[r].outputs.end(), hash) != rows[r].outputs.end()) return r;
  return rows.size();
}

}  // namespace

StreamAlignment align_streams(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b) {
  std::vector<uint64_t> ka, kb;
  for (const trace::Row& r : a) ka.push_back(op_key(r));
  for (const trace::Row& r : b) kb.push_back(op_key(r));
  StreamAlignment s;
  s.pairs = common_subsequence(ka, kb);
  // The rows left over: paired by key in order (the key holds the site: a reordering within a
  // module), the rest dropped or inserted.
  std::vector<bool> in_a(a.size(), false), in_b(b.size(), false);
  for (const auto& [i, j] : s.pairs) in_a[i] = in_b[j] = true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (in_a[i]) continue;
    size_t j = 0;
    while (j < b.size() && (in_b[j] || kb[j] != ka[i])) ++j;
    if (j == b.size()) {
      s.dropped.push_back(i);
      continue;
    }
    in_a[i] = in_b[j] = true;
    s.pairs.emplace_back(i, j);
    s.reordered.push_back(i);
  }
  for (size_t j = 0; j < b.size(); ++j)
    if (!in_b[j]) s.inserted.push_back(j);
  std::sort(s.pairs.begin(), s.pairs.end());
  return s;
}

StreamComparison compare_aligned(const std::vector<trace::Row>& a, const std::vector<trace::Row>& b) {
  StreamComparison c;
  c.rows_a = a.size();
  c.rows_b = b.size();
  c.alignment = align_streams(a, b);
  const StreamAlignment& al = *c.alignment;
  const auto only_in = [](const std::vector<size_t>& rows, size_t r) {
    return std::binary_search(rows.begin(), rows.end(), r);
  };
  for (const auto& [i, j] : al.pairs) {
    const bool same_out = a[i].outputs == b[j].outputs;
    if (!c.origin) {
      std::vector<size_t> differing;
      for (size_t k = 0; k < a[i].inputs.size(); ++k)
        if (a[i].inputs[k] != b[j].inputs[k]) differing.push_back(k);
      if (differing.empty() && same_out) continue;
      c.origin = i;
      c.origin_b = j;
      c.origin_kind = differing.empty() ? "op" : "input";
      c.differing_inputs = differing;
      for (size_t k : differing) {
        const size_t pa = producer(a, i, a[i].inputs[k]), pb = producer(b, j, b[j].inputs[k]);
        if (pa < a.size() && only_in(al.dropped, pa)) {
          c.input_sources.push_back("input " + std::to_string(k) + " written by A's op " + std::to_string(pa) + ", " +
                                    a[pa].name() + ", which B does not run");
        } else if (pb < b.size() && only_in(al.inserted, pb)) {
          c.input_sources.push_back("input " + std::to_string(k) + " written by B's op " + std::to_string(pb) + ", " +
                                    b[pb].name() + ", which A does not run");
        } else {
          c.input_sources.push_back("input " + std::to_string(k) + " written outside the traced ops");
        }
      }
    }
    if (!same_out) c.propagation.push_back(RowDistance{i, 0, 0, 0});
  }
  return c;
}

}  // namespace sb::cli
