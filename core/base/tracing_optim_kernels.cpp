// TracingOptimKernels (tracing_backend.hpp): each optimizer kernel's regions hashed around the
// inner backend's call, as TracingBackend's ops are; an exact sum's result is its words
// (det::ExactSum::to_words), so two runs' sums compare bit for bit.
#include <vector>

#include "samebits/core/tracing_backend.hpp"
#include "trace_regions.hpp"

namespace sb {
namespace {

using trace_detail::flat;
using trace_detail::Region;

class OpRow : public trace_detail::OpRow {
 public:
  OpRow(TracingBackend& be, const char* op, std::initializer_list<Region> inputs)
      : trace_detail::OpRow(be.inner(), be.tracer(), op, inputs) {}
};

int64_t len(size_t n) { return static_cast<int64_t>(n); }

std::vector<uint32_t> sum_words(const det::ExactSum& s) {
  std::vector<int64_t> words(det::ExactSum::kWords);
  s.to_words(words.data());
  std::vector<uint32_t> out;
  for (int64_t w : words) {
    const auto u = static_cast<uint64_t>(w);
    out.push_back(static_cast<uint32_t>(u)), out.push_back(static_cast<uint32_t>(u >> 32));
  }
  return out;
}

}  // namespace

TracingOptimKernels::TracingOptimKernels(TracingBackend& owner)
    : owner_(owner), inner_(owner.inner().optim_kernels()) {}

void TracingOptimKernels::muon_momentum(float* m, float* u, const float* g, size_t n, const ops::MuonMomentum& k) {
  OpRow row(owner_, "muon_momentum", {flat(m, len(n)), flat(g, len(n))});
  inner_.muon_momentum(m, u, g, n, k);
  row.done({flat(m, len(n)), flat(u, len(n))}, {len(n)});
}

void TracingOptimKernels::muon_normalize(float* x, const float* u, size_t n, float denom) {
  OpRow row(owner_, "muon_normalize", {flat(u, len(n))});
  inner_.muon_normalize(x, u, n, denom);
  row.done({flat(x, len(n))}, {len(n)});
}

void TracingOptimKernels::ns_polynomial(float* b, const float* a, size_t n, float pb, float pc) {
  OpRow row(owner_, "ns_polynomial", {flat(b, len(n)), flat(a, len(n))});
  inner_.ns_polynomial(b, a, n, pb, pc);
  row.done({flat(b, len(n))}, {len(n)});
}

void TracingOptimKernels::ns_combine(float* x, const float* bx, size_t n, float pa) {
  OpRow row(owner_, "ns_combine", {flat(x, len(n)), flat(bx, len(n))});
  inner_.ns_combine(x, bx, n, pa);
  row.done({flat(x, len(n))}, {len(n)});
}

det::ExactSum TracingOptimKernels::ortho_squares(const float* a, int r) {
  OpRow row(owner_, "ortho_squares", {flat(a, int64_t(r) * r)});
  det::ExactSum s = inner_.ortho_squares(a, r);
  row.done_host(sum_words(s));
  return s;
}

void TracingOptimKernels::muon_apply(float* w, const float* x, size_t n, float decay, float step, UpdateSums* sums) {
  OpRow row(owner_, "muon_apply", {flat(w, len(n)), flat(x, len(n))});
  inner_.muon_apply(w, x, n, decay, step, sums);
  row.done({flat(w, len(n))}, {len(n)});
}

void TracingOptimKernels::muon_apply_rows(float* w, const float* x, int rows, int cols, float decay, float step,
                                          const float* row_step, bool cautious, UpdateSums* sums) {
  const int64_t n = int64_t(rows) * cols;
  OpRow row(owner_, "muon_apply_rows", {flat(w, n), flat(x, n), flat(row_step, rows)});
  inner_.muon_apply_rows(w, x, rows, cols, decay, step, row_step, cautious, sums);
  row.done({flat(w, n)}, {rows, cols});
}

void TracingOptimKernels::adamw(float* w, const float* g, float* m, float* v, size_t n, const ops::AdamWConstants& k,
                                UpdateSums* sums) {
  OpRow row(owner_, "adamw", {flat(w, len(n)), flat(g, len(n)), flat(m, len(n)), flat(v, len(n))});
  inner_.adamw(w, g, m, v, n, k, sums);
  row.done({flat(w, len(n)), flat(m, len(n)), flat(v, len(n))}, {len(n)});
}

det::ExactSum TracingOptimKernels::sum_of_squares(const float* x, size_t n) {
  OpRow row(owner_, "sum_of_squares", {flat(x, len(n))});
  det::ExactSum s = inner_.sum_of_squares(x, n);
  row.done_host(sum_words(s));
  return s;
}

void TracingOptimKernels::scale(float* x, size_t n, float factor) {
  OpRow row(owner_, "scale", {flat(x, len(n))});
  inner_.scale(x, n, factor);
  row.done({flat(x, len(n))}, {len(n)});
}

}  // namespace sb
