// op_cases.hpp: the gradient accumulator (rule 4), the tensor sums and fingerprints, and the
// optimizers' kernels (optim_kernels.hpp) — plus Newton–Schulz and the clip as the optimizers
// run them (composites of the ops above).
#include <cmath>

#include "invariance/op_cases.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/optim/ns_coefficients.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb::invariance {
namespace {

void add_words(OpOutput& out, const det::ExactSum& s) {
  std::vector<int64_t> w(det::ExactSum::kWords);
  s.to_words(w.data());
  for (int64_t x : w) out.words.push_back(static_cast<uint64_t>(x));
}

// An exact sum's words as a case's output.
OpOutput sum_output(const det::ExactSum& s) {
  OpOutput out;
  add_words(out, s);
  return out;
}

void add_sums(OpOutput& out, const UpdateSums& s) {
  add_words(out, s.delta_sq);
  add_words(out, s.weight_sq);
}

OpOutput grad_accumulator_case(Backend& be) {
  Buffers buf(be);
  const size_t n = 5000;
  auto acc = be.make_accumulator(n);
  acc->clear();
  for (uint32_t leaf = 0; leaf < 5; ++leaf) {  // leaves of different magnitudes
    std::vector<float> g = uniform(n, 40 + leaf);
    for (float& x : g) x = std::ldexp(x, int(leaf) * 3 - 6);
    acc->add(buf.upload(g));
  }
  float* out = buf.zeros(n);
  acc->round(out, 5.0f);
  return {buf.download(out, n), {acc->adds(), acc->status()}};
}

const std::vector<TensorSpan> kSpans{{0, 1000}, {1000, 2000}, {3000, 1}, {3001, 999}};

OpOutput tensor_sums_case(Backend& be) {
  Buffers buf(be);
  auto sums = be.make_tensor_sums(kSpans);
  sums->clear();
  sums->add(buf.upload(uniform(4000, 45)), true);
  sums->add(buf.upload(uniform(4000, 46, -3, 3)), false);
  std::vector<det::ExactSum> squares(kSpans.size()), totals(kSpans.size());
  std::vector<float> max_abs(kSpans.size());
  sums->read(squares.data(), totals.data(), max_abs.data());
  OpOutput out{max_abs, {}};
  for (size_t t = 0; t < kSpans.size(); ++t) add_words(out, squares[t]), add_words(out, totals[t]);
  return out;
}

OpOutput fingerprints_case(Backend& be) {
  Buffers buf(be);
  OpOutput out;
  out.words.resize(kSpans.size());
  be.fingerprints(buf.upload(uniform(4000, 47)), kSpans, out.words.data());
  return out;
}

constexpr size_t kN = 4099;

OpOutput muon_momentum_case(Backend& be) {
  Buffers buf(be);
  float *m = buf.upload(uniform(kN, 48)), *u = buf.zeros(kN);
  be.optim_kernels().muon_momentum(m, u, buf.upload(uniform(kN, 49)), kN, ops::MuonMomentum{0.95f, 0.05f, false, true});
  return buf.values({{m, kN}, {u, kN}});
}

OpOutput muon_normalize_case(Backend& be) {
  Buffers buf(be);
  float* x = buf.zeros(kN);
  be.optim_kernels().muon_normalize(x, buf.upload(uniform(kN, 50)), kN, 3.7f);
  return buf.values({{x, kN}});
}

OpOutput ns_polynomial_case(Backend& be) {
  Buffers buf(be);
  float* b = buf.upload(uniform(kN, 51));
  be.optim_kernels().ns_polynomial(b, buf.upload(uniform(kN, 52)), kN, -4.775f, 2.0315f);
  return buf.values({{b, kN}});
}

OpOutput ns_combine_case(Backend& be) {
  Buffers buf(be);
  float* x = buf.upload(uniform(kN, 53));
  be.optim_kernels().ns_combine(x, buf.upload(uniform(kN, 54)), kN, 3.4445f);
  return buf.values({{x, kN}});
}

OpOutput ortho_squares_case(Backend& be) {
  Buffers buf(be);
  return sum_output(be.optim_kernels().ortho_squares(buf.upload(uniform(60 * 60, 55)), 60));
}

OpOutput muon_apply_case(Backend& be) {
  Buffers buf(be);
  float* w = buf.upload(uniform(kN, 56));
  UpdateSums sums;
  be.optim_kernels().muon_apply(w, buf.upload(uniform(kN, 57)), kN, 0.999f, 0.02f, &sums);
  OpOutput out = buf.values({{w, kN}});
  add_sums(out, sums);
  return out;
}

OpOutput muon_apply_rows_case(Backend& be) {
  Buffers buf(be);
  const int rows = 30, cols = 50;
  float* w = buf.upload(uniform(size_t(rows) * cols, 58));
  UpdateSums sums;
  be.optim_kernels().muon_apply_rows(w, buf.upload(uniform(size_t(rows) * cols, 59)), rows, cols, 0.999f, 0.02f,
                                     buf.upload(uniform(rows, 60, 0.01f, 0.03f)), true, &sums);
  OpOutput out = buf.values({{w, size_t(rows) * cols}});
  add_sums(out, sums);
  return out;
}

OpOutput adamw_case(Backend& be) {
  Buffers buf(be);
  float *w = buf.upload(uniform(kN, 61)), *m = buf.upload(uniform(kN, 62, -0.01f, 0.01f)),
        *v = buf.upload(uniform(kN, 63, 0.0f, 1e-4f));
  const ops::AdamWConstants k{0.9f, 0.1f, 0.95f, 0.05f, 1e-8f, 0.003f, 0.31f, 0.9999f};
  UpdateSums sums;
  be.optim_kernels().adamw(w, buf.upload(uniform(kN, 64)), m, v, kN, k, &sums);
  OpOutput out = buf.values({{w, kN}, {m, kN}, {v, kN}});
  add_sums(out, sums);
  return out;
}

OpOutput sum_of_squares_case(Backend& be) {
  Buffers buf(be);
  return sum_output(be.optim_kernels().sum_of_squares(buf.upload(uniform(10007, 65, -4, 4)), 10007));
}

OpOutput scale_case(Backend& be) {
  Buffers buf(be);
  float* x = buf.upload(uniform(kN, 66));
  be.optim_kernels().scale(x, kN, 0.37f);
  return buf.values({{x, kN}});
}

OpOutput newton_schulz_case(Backend& be) {
  Buffers buf(be);
  const int rows = 96, cols = 48;  // tall: the iteration on the transpose
  float* x = buf.zeros(size_t(rows) * cols);
  NewtonSchulz ns(be, Precision::fp32);
  float ortho = 0;
  ns.run(buf.upload(uniform(size_t(rows) * cols, 67)), x, rows, cols, std::vector<NsStep>(5, kKellerNs), 1e-7, &ortho);
  OpOutput out = buf.values({{x, size_t(rows) * cols}});
  out.values.push_back(ortho);
  return out;
}

OpOutput clip_case(Backend& be) {
  Buffers buf(be);
  float* g = buf.upload(uniform(kN, 68, -2, 2));
  const ClipResult r = clip_grad_norm(be.optim_kernels(), g, kN, 1.0);
  OpOutput out = buf.values({{g, kN}});
  out.values.push_back(r.norm), out.values.push_back(r.factor);
  return out;
}

}  // namespace

std::vector<OpCase> optim_op_cases() {
  return {
      {"grad_accumulator", "5 leaves × 5000, magnitudes 2⁻⁶…2⁶, add and round", grad_accumulator_case},
      {"tensor_sums", "4 spans of 4000, with and without moments", tensor_sums_case},
      {"fingerprints", "4 spans of 4000", fingerprints_case},
      {"muon_momentum", "4099, Nesterov", muon_momentum_case},
      {"muon_normalize", "4099", muon_normalize_case},
      {"ns_polynomial", "4099", ns_polynomial_case},
      {"ns_combine", "4099", ns_combine_case},
      {"ortho_squares", "60×60", ortho_squares_case},
      {"muon_apply", "4099, with the update sums", muon_apply_case},
      {"muon_apply_rows", "30×50, cautious, per-row steps", muon_apply_rows_case},
      {"adamw", "4099, with the update sums", adamw_case},
      {"sum_of_squares", "10007", sum_of_squares_case},
      {"scale", "4099", scale_case},
      {"newton_schulz", "96×48, 5 quintic iterations and the orthogonality error", newton_schulz_case},
      {"clip", "4099, clipped to norm 1", clip_case},
  };
}

}  // namespace sb::invariance
