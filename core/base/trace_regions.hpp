// The regions an op reads and writes, gathered to the host and hashed around the inner backend's
// call (tracing_backend.cpp, tracing_optim_kernels.cpp). A region is `rows` rows of `cols` 32-bit
// elements, `ld` apart (a GEMM operand); det::fingerprint of its bits, so equal bits give equal
// hashes on every backend.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "samebits/core/trace.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::trace_detail {

struct Region {
  const void* p = nullptr;  // null: absent (an optional operand)
  int64_t rows = 0, cols = 0, ld = 0;
};
inline Region flat(const void* p, int64_t n) { return {p, 1, n, n}; }
inline Region matrix(const void* p, int64_t rows, int64_t cols, int64_t ld) { return {p, rows, cols, ld}; }

// The region's elements, row after row, on the host.
inline std::vector<uint32_t> gather(Backend& be, const Region& r) {
  std::vector<uint32_t> out(static_cast<size_t>(r.rows * r.cols));
  const size_t span = r.rows == 0 ? 0 : static_cast<size_t>((r.rows - 1) * r.ld + r.cols);
  std::vector<uint32_t> staging;
  const auto* src = static_cast<const uint32_t*>(r.p);
  if (be.device() != Device::cpu) {
    staging.resize(span);
    be.copy_to_host(staging.data(), r.p, span * sizeof(uint32_t));
    src = staging.data();
  }
  for (int64_t i = 0; i < r.rows; ++i) std::copy_n(src + i * r.ld, r.cols, out.begin() + i * r.cols);
  return out;
}

inline uint64_t hash(const std::vector<uint32_t>& v) { return det::fingerprint(v.data(), v.size() * sizeof(uint32_t)); }

// One op's row: inputs hashed at construction, outputs at done(); nothing when `rec` is null.
// `inner` is the backend whose memory the regions are.
class OpRow {
 public:
  OpRow(Backend& inner, trace::Recorder* rec, const char* op, std::initializer_list<Region> inputs)
      : inner_(inner), rec_(rec) {
    if (rec_ == nullptr) return;
    row_ = &rec_->add(op);
    for (const Region& r : inputs)
      if (r.p != nullptr) row_->inputs.push_back(hash(gather(inner_, r)));
  }
  void done(std::initializer_list<Region> outputs, std::vector<int64_t> shape) {
    if (rec_ == nullptr) return;
    row_->shape = std::move(shape);
    for (const Region& r : outputs) {
      if (r.p == nullptr) continue;
      std::vector<uint32_t> v = gather(inner_, r);
      row_->outputs.push_back(hash(v));
      row_->output_numel.push_back(v.size());
      if (rec_->keep_values()) row_->values.insert(row_->values.end(), v.begin(), v.end());
    }
  }
  // A host-side result (an exact sum's words): hashed, and kept as values when values are kept.
  void done_host(const std::vector<uint32_t>& words) {
    if (rec_ == nullptr) return;
    row_->shape = {static_cast<int64_t>(words.size())};
    row_->outputs.push_back(hash(words));
    row_->output_numel.push_back(words.size());
    if (rec_->keep_values()) row_->values.insert(row_->values.end(), words.begin(), words.end());
  }

 private:
  Backend& inner_;
  trace::Recorder* rec_;
  trace::Row* row_ = nullptr;
};

}  // namespace sb::trace_detail
