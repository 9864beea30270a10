// divergence.hpp: the distance curve's points, its growth (least-squares rate, jump step,
// threshold step), the experiment-field differences, and the text/JSON forms shared by diff and
// side by side. Determinism: fp64 in ascending element and point order; ln through frexp and
// samebits' log (no libm), so every machine prints the same numbers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "samebits/cli/divergence.hpp"
#include "samebits/cli/json.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"

namespace sb::cli {
namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// ln x for finite x > 0: x = m·2^e exactly (frexp), ln x = e·ln 2 + ln m with samebits' log of
// m in [0.5, 1) (absolute error below 1e-7: a reported number, not training arithmetic).
double ln(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);
  return double(e) * 0x1.62e42fefa39efp-1 + double(det::log(static_cast<float>(m)));
}

std::string json_step(int64_t step) { return step > 0 ? std::to_string(step) : "null"; }

std::string ulp_text(uint64_t ulp) { return ulp == kUlpNaN ? "NaN" : std::to_string(ulp); }

// "section.key = value" lines of an experiment text, by key.
std::map<std::string, std::string> experiment_fields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const std::size_t eq = line.find(" = ");
    if (eq != std::string::npos) out[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return out;
}

}  // namespace

DistancePoint distance_point(int64_t step, const std::vector<run::TensorInfo>& tensors, std::span<const float> a,
                             std::span<const float> b) {
  SB_CHECK(a.size() == b.size() && a.size() >= run::flat_size(tensors), "distance at step ", step, ": ", a.size(),
           " and ", b.size(), " parameters, but the tensor table needs ", run::flat_size(tensors));
  DistancePoint p;
  p.step = step;
  double diff_sq = 0, norm_sq = 0;
  uint64_t numel = 0, differing = 0;
  for (const run::TensorInfo& t : tensors) {
    for (std::size_t i = t.offset; i < t.offset + t.numel; ++i) {
      const double x = a[i], y = b[i];
      norm_sq += x * x;
      if (bits_of(a[i]) == bits_of(b[i])) continue;
      ++differing;
      p.max_ulp = std::max(p.max_ulp, ulp_distance(a[i], b[i]));
      diff_sq += (x - y) * (x - y);
    }
    numel += t.numel;
  }
  p.differing_fraction = numel ? double(differing) / double(numel) : 0.0;
  if (differing == 0) p.rel_l2 = 0;
  else if (norm_sq == 0) p.rel_l2 = std::numeric_limits<double>::infinity();
  else p.rel_l2 = std::sqrt(diff_sq) / std::sqrt(norm_sq);
  return p;
}

Growth distance_growth(std::span<const DistancePoint> curve, int64_t first_divergent_step, double threshold) {
  Growth g;
  g.threshold = threshold;
  std::vector<double> xs, ys;  // (fitted points) step, ln rel_l2
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const DistancePoint& p = curve[i];
    SB_CHECK(i == 0 || p.step > curve[i - 1].step, "distance curve: step ", p.step, " follows step ",
             curve[i == 0 ? 0 : i - 1].step, "; points must be in ascending step order");
    if (g.threshold_step == 0 && p.rel_l2 >= threshold) g.threshold_step = p.step;
    if (p.step < first_divergent_step || !(p.rel_l2 > 0) || !std::isfinite(p.rel_l2)) continue;
    xs.push_back(double(p.step));
    ys.push_back(ln(p.rel_l2));
  }
  g.points = int64_t(xs.size());
  if (xs.size() < 2) return g;
  double xm = 0, ym = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xm += xs[i];
    ym += ys[i];
  }
  xm /= double(xs.size());
  ym /= double(xs.size());
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    sxx += (xs[i] - xm) * (xs[i] - xm);
    sxy += (xs[i] - xm) * (ys[i] - ym);
  }
  g.rate = sxy / sxx;
  g.intercept = ym - g.rate * xm;
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const double increase = (ys[i] - ys[i - 1]) / (xs[i] - xs[i - 1]);
    if (g.jump_step == 0 || increase > g.jump) {
      g.jump = increase;
      g.jump_step = int64_t(xs[i]);
    }
  }
  return g;
}

std::vector<std::string> experiment_field_differences(const std::string& text_a, const std::string& text_b) {
  const auto fa = experiment_fields(text_a), fb = experiment_fields(text_b);
  std::vector<std::string> out;
  for (const auto& [key, value] : fa) {
    const auto it = fb.find(key);
    const std::string other = it == fb.end() ? "(absent)" : it->second;
    if (other != value) out.push_back(key + " = " + value + " | " + other);
  }
  for (const auto& [key, value] : fb) {
    if (fa.find(key) == fa.end()) out.push_back(key + " = (absent) | " + value);
  }
  return out;
}

std::string distance_json(const DistancePoint& p) {
  return "{\"step\": " + std::to_string(p.step) + ", \"rel_l2\": " + json_number(p.rel_l2) +
         ", \"max_ulp\": " + (p.max_ulp == kUlpNaN ? "null" : std::to_string(p.max_ulp)) +
         ", \"differing_fraction\": " + json_number(p.differing_fraction) + "}";
}

std::string growth_json(const Growth& g) {
  return "{\"points\": " + std::to_string(g.points) + ", \"rate\": " + json_number(g.rate) +
         ", \"intercept\": " + json_number(g.intercept) + ", \"jump_step\": " + json_step(g.jump_step) +
         ", \"jump\": " + json_number(g.jump) + ", \"threshold\": " + json_number(g.threshold) +
         ", \"threshold_step\": " + json_step(g.threshold_step) + "}";
}

std::string agreement_json(const Agreement& a) {
  return "{\"step\": " + std::to_string(a.step) + ", \"source\": " + json_string(a.source) +
         ", \"positions\": " + std::to_string(a.positions) + ", \"disagreeing\": " + std::to_string(a.disagreeing) +
         ", \"disagreement\": " + json_number(a.disagreement) +
         ", \"logit_correlation\": " + json_number(a.logit_correlation) + ", \"loss_a\": " + json_number(a.loss_a) +
         ", \"loss_b\": " + json_number(a.loss_b) + ", \"routes\": " + std::to_string(a.routes) +
         ", \"routes_differing\": " + std::to_string(a.routes_differing) +
         ", \"route_disagreement\": " + json_number(a.route_disagreement) + "}";
}

std::string distance_text(const std::vector<DistancePoint>& curve, const Growth& growth, std::size_t rows) {
  std::ostringstream s;
  if (curve.empty()) return "";
  // Rows: evenly spaced from the first non-zero point (or the start) to the last.
  std::size_t first = 0;
  while (first < curve.size() && curve[first].rel_l2 == 0) ++first;
  if (first > 0) --first;  // the last zero point shows where the distance was still 0
  std::vector<std::size_t> shown;
  const std::size_t span = curve.size() - 1 - first;
  const std::size_t n = std::max<std::size_t>(2, rows);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = first + (span * k) / (n - 1);
    if (shown.empty() || shown.back() != i) shown.push_back(i);
  }
  s << "distance     " << curve.size() << " point(s) from step " << curve.front().step << " to " << curve.back().step
    << "\n";
  s << "  step        rel L2     max ULP   differing\n";
  for (const std::size_t i : shown) {
    const DistancePoint& p = curve[i];
    char line[128];
    std::snprintf(line, sizeof line, "  %6lld  %12.4g  %10s  %9.4f%%\n", (long long)p.step, p.rel_l2,
                  ulp_text(p.max_ulp).c_str(), 100.0 * p.differing_fraction);
    s << line;
  }
  s << "growth       ";
  if (growth.points < 2) {
    s << "fewer than two non-zero points: no rate";
  } else {
    s << "ln(rel L2) grows " << fmt("%.4g", growth.rate) << " per step over " << growth.points << " points";
    if (growth.rate > 0) s << " (x10 every " << fmt("%.3g", 2.302585092994046 / growth.rate) << " steps)";
    s << "; jump at step " << growth.jump_step << " (" << fmt("%.3g", growth.jump) << " per step)";
  }
  s << "; rel L2 >= " << fmt("%g", growth.threshold) << " "
    << (growth.threshold_step > 0 ? "from step " + std::to_string(growth.threshold_step) : std::string("never"))
    << "\n";
  return s.str();
}

std::string loss_gap_text(std::span<const double> gap) {
  double max_gap = 0;
  std::size_t max_step = 0;
  for (std::size_t i = 0; i < gap.size(); ++i) {
    if (gap[i] > max_gap || std::isnan(gap[i])) {
      max_gap = gap[i];
      max_step = i + 1;
      if (std::isnan(max_gap)) break;
    }
  }
  if (max_step == 0) return "loss gap     0 at all " + std::to_string(gap.size()) + " steps\n";
  return "loss gap     max " + fmt("%.3g", max_gap) + " at step " + std::to_string(max_step) + "; final " +
         fmt("%.3g", gap.back()) + " (step " + std::to_string(gap.size()) + ")\n";
}

std::string agreement_text(const Agreement& a) {
  std::ostringstream s;
  s << "predictions  at step " << a.step << (a.source.empty() ? "" : " (" + a.source + ")") << ": " << a.disagreeing
    << " of " << a.positions << " argmax tokens differ (" << fmt("%.4g", 100.0 * a.disagreement)
    << "%), logit correlation " << fmt("%.9f", a.logit_correlation);
  if (a.logit_correlation < 1) s << " (1 - r = " << fmt("%.3g", 1 - a.logit_correlation) << ")";
  s << ", loss " << fmt("%.6f", a.loss_a) << " | " << fmt("%.6f", a.loss_b) << "\n";
  if (a.routes > 0)
    s << "routing      " << a.routes_differing << " of " << a.routes
      << " token routes (positions × MoE blocks) differ (" << fmt("%.4g", 100.0 * a.route_disagreement) << "%)\n";
  return s.str();
}

}  // namespace sb::cli
