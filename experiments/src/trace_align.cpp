// trace.hpp: two recorded op streams of different lengths (programs samebits cannot replay, such
// as samebits.torch's) aligned and compared. Rows match by their op key (site, op, shape, input
// and output counts) along a longest common subsequence (Myers' O((N+M)·D) diff in linear space,
// by middle snakes: Myers 1986, §4b — whole steps of a GPT-2-sized model align);
// rows left over are paired by key in order (the key holds the site: a reordering within a
// module); the rest are dropped (only in A) or inserted (only in B). The origin is the first
// aligned pair whose inputs or outputs differ. Deterministic: a function of the two streams only.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include "samebits/cli/trace.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::cli {
namespace {

uint64_t op_key(const trace::Row& r) {
  std::string k =
      r.site + '\n' + r.op + '\n' + std::to_string(r.inputs.size()) + ' ' + std::to_string(r.outputs.size());
  for (int64_t d : r.shape) k += ' ' + std::to_string(d);
  return det::fingerprint(k.data(), k.size());
}

// Myers' middle snake of x (n) against y (m), n + m > 0: the edit distance d and the diagonal run
// (x0, y0) → (x1, y1) crossing the middle of an optimal edit path, found by searching from both
// ends at once (Myers 1986, §4b). vf and vb: scratch of 2·((n + m + 1) / 2) + 3 entries each.
struct Snake {
  int64_t d, x0, y0, x1, y1;
};

Snake middle_snake(const uint64_t* x, int64_t n, const uint64_t* y, int64_t m, std::vector<int64_t>& vf,
                   std::vector<int64_t>& vb) {
  const int64_t delta = n - m, limit = (n + m + 1) / 2, mid = limit + 1;
  const bool odd = (delta & 1) != 0;
  vf[size_t(mid + 1)] = 0;
  vb[size_t(mid + 1)] = 0;
  // One step of either search on diagonal k: the furthest x after its edit and its run of equal
  // keys (the backward search runs on the reversed sequences).
  const auto extend = [&](std::vector<int64_t>& v, int64_t d, int64_t k, bool backward, int64_t& start) {
    int64_t i = k == -d || (k != d && v[size_t(mid + k - 1)] < v[size_t(mid + k + 1)]) ? v[size_t(mid + k + 1)]
                                                                                       : v[size_t(mid + k - 1)] + 1;
    start = i;
    int64_t j = i - k;
    while (i < n && j < m && (backward ? x[n - 1 - i] == y[m - 1 - j] : x[i] == y[j])) ++i, ++j;
    v[size_t(mid + k)] = i;
    return i;
  };
  for (int64_t d = 0; d <= limit; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t start = 0;
      const int64_t i = extend(vf, d, k, false, start);
      const int64_t r = delta - k;  // the same diagonal in the backward search's coordinates
      if (odd && r >= -(d - 1) && r <= d - 1 && i + vb[size_t(mid + r)] >= n)
        return Snake{2 * d - 1, start, start - k, i, i - k};
    }
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t start = 0;
      const int64_t i = extend(vb, d, k, true, start);
      const int64_t f = delta - k;
      if (!odd && f >= -d && f <= d && i + vf[size_t(mid + f)] >= n)
        return Snake{2 * d, n - i, m - (i - k), n - start, m - (start - k)};
    }
  }
  SB_FAIL("samebits trace: no middle snake within ", limit, " edits of ", n, " and ", m, " rows (internal error)");
}

// Appends the matched (x, y) index pairs (offset by x_at, y_at) of a longest common subsequence of
// x (n) and y (m), ascending: the middle snake, then the parts before and after it, each with at
// most half the edits (so the recursion is O(log edits) deep, its memory O(n + m)).
void common_subsequence(const uint64_t* x, int64_t n, const uint64_t* y, int64_t m, size_t x_at, size_t y_at,
                        std::vector<int64_t>& vf, std::vector<int64_t>& vb,
                        std::vector<std::pair<size_t, size_t>>& pairs) {
  if (n == 0 || m == 0) return;
  const Snake s = middle_snake(x, n, y, m, vf, vb);
  if (s.d <= 1) {  // at most one row only in x or only in y: every other row matches, in order
    for (int64_t i = 0, j = 0; i < n && j < m;) {
      if (x[i] == y[j]) {
        pairs.emplace_back(x_at + size_t(i++), y_at + size_t(j++));
      } else {
        (n > m ? i : j)++;
      }
    }
    return;
  }
  common_subsequence(x, s.x0, y, s.y0, x_at, y_at, vf, vb, pairs);
  for (int64_t t = 0; t < s.x1 - s.x0; ++t) pairs.emplace_back(x_at + size_t(s.x0 + t), y_at + size_t(s.y0 + t));
  common_subsequence(x + s.x1, n - s.x1, y + s.y1, m - s.y1, x_at + size_t(s.x1), y_at + size_t(s.y1), vf, vb, pairs);
}

std::vector<std::pair<size_t, size_t>> common_subsequence(const std::vector<uint64_t>& x,
                                                          const std::vector<uint64_t>& y) {
  const size_t scratch = 2 * ((x.size() + y.size() + 1) / 2) + 3;
  std::vector<int64_t> vf(scratch), vb(scratch);
  std::vector<std::pair<size_t, size_t>> pairs;
  common_subsequence(x.data(), int64_t(x.size()), y.data(), int64_t(y.size()), 0, 0, vf, vb, pairs);
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
  std::unordered_map<uint64_t, std::deque<size_t>> left_in_b;  // key → B's rows left over, ascending
  for (size_t j = 0; j < b.size(); ++j)
    if (!in_b[j]) left_in_b[kb[j]].push_back(j);
  for (size_t i = 0; i < a.size(); ++i) {
    if (in_a[i]) continue;
    const auto same_key = left_in_b.find(ka[i]);
    if (same_key == left_in_b.end() || same_key->second.empty()) {
      s.dropped.push_back(i);
      continue;
    }
    const size_t j = same_key->second.front();
    same_key->second.pop_front();
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
