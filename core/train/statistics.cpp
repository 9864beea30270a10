// Leaf-variance sums and per-step gradient statistics (train/statistics.hpp). Every sum is an
// exact det::ExactSum computed where the gradients live (Backend TensorSums), merged across
// leaves and ranks as integer limbs, then rounded once; the estimators are a
// fixed sequence of fp64 operations on those roundings.
#include "samebits/core/train/statistics.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

}  // namespace

NoiseEstimate estimate_noise(double leaf_sq_mean, double batch_sq, double b_small, double b_big) {
  if (!(b_big > b_small)) return {kNaN, kNaN, kNaN};
  NoiseEstimate e;
  e.grad_sq = (b_big * batch_sq - b_small * leaf_sq_mean) / (b_big - b_small);
  e.trace = (leaf_sq_mean - batch_sq) / (1.0 / b_small - 1.0 / b_big);
  e.noise_scale = e.trace / e.grad_sq;
  return e;
}

namespace {

std::vector<TensorSpan> spans_of(const std::vector<ParamView>& layout) {
  std::vector<TensorSpan> spans;
  spans.reserve(layout.size());
  for (const ParamView& p : layout) spans.push_back({p.offset, p.numel});
  return spans;
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

}  // namespace

GradientStatistics::GradientStatistics(std::vector<ParamView> layout, std::unique_ptr<TensorSums> leaf,
                                       std::unique_ptr<TensorSums> batch, std::vector<size_t> slots, size_t tensors)
    : layout_(std::move(layout)),
      slots_(std::move(slots)),
      leaf_(std::move(leaf)),
      batch_(std::move(batch)),
      leaf_sq_(tensors) {
  SB_CHECK(slots_.size() == layout_.size(), "gradient statistics: ", slots_.size(), " places for ", layout_.size(),
           " tensors");
  for (size_t s : slots_) SB_CHECK(s < tensors, "gradient statistics: place ", s, " beyond ", tensors, " tensors");
}

GradientStatistics::GradientStatistics(const std::vector<ParamView>& layout)
    : GradientStatistics(layout, make_host_tensor_sums(spans_of(layout)), make_host_tensor_sums(spans_of(layout)),
                         identity(layout.size()), layout.size()) {}

GradientStatistics::GradientStatistics(const std::vector<ParamView>& layout, Backend& backend)
    : GradientStatistics(layout, backend, identity(layout.size()), layout.size()) {}

GradientStatistics::GradientStatistics(const std::vector<ParamView>& layout, Backend& backend,
                                       std::vector<size_t> slots, size_t tensors)
    : GradientStatistics(layout, backend.make_tensor_sums(spans_of(layout)), backend.make_tensor_sums(spans_of(layout)),
                         std::move(slots), tensors) {}

void GradientStatistics::clear() {
  leaf_->clear();
  leaves_pending_ = false;
  for (det::ExactSum& s : leaf_sq_) s.clear();
}

void GradientStatistics::add_leaf(const float* grad) {
  leaf_->add(grad, false);
  leaves_pending_ = true;
}

void GradientStatistics::read_leaves() {
  if (!leaves_pending_) return;
  std::vector<det::ExactSum> mine(layout_.size());  // (layout tensors)
  leaf_->read(mine.data(), nullptr, nullptr);
  for (det::ExactSum& s : leaf_sq_) s.clear();
  for (size_t i = 0; i < mine.size(); ++i) leaf_sq_[slots_[i]] = mine[i];
  leaves_pending_ = false;
}

void GradientStatistics::to_words(int64_t* out) {
  read_leaves();
  for (size_t t = 0; t < leaf_sq_.size(); ++t) leaf_sq_[t].to_words(out + t * det::ExactSum::kWords);
}

void GradientStatistics::from_words(const int64_t* in) {
  leaves_pending_ = false;
  for (size_t t = 0; t < leaf_sq_.size(); ++t) {
    leaf_sq_[t] = det::ExactSum::from_words(in + t * det::ExactSum::kWords);
  }
}

void GradientStatistics::finish(const float* grad, double leaf_scale, int64_t leaves, int64_t leaf_size,
                                StepStats& stats) {
  if (grad == nullptr) return finish(nullptr, det::ExactSum{}, leaf_scale, leaves, leaf_size, stats);
  SB_CHECK(layout_.size() == leaf_sq_.size(), "gradient statistics of a stage's ", layout_.size(), " of ",
           leaf_sq_.size(), " tensors need the whole model's batch sums (finish with TensorBatchSums)");
  std::vector<det::ExactSum> tensor_sq(layout_.size()), tensor_sum(layout_.size());  // (tensors)
  std::vector<float> tensor_max(layout_.size());                                     // (tensors)
  batch_->clear();
  batch_->add(grad, true);
  batch_->read(tensor_sq.data(), tensor_sum.data(), tensor_max.data());
  std::vector<TensorBatchSums> batch(layout_.size());  // (tensors)
  det::ExactSum batch_total;
  for (size_t t = 0; t < layout_.size(); ++t) {
    batch[t] = batch_sums(tensor_sq[t], tensor_sum[t], tensor_max[t], layout_[t].numel);
    batch_total.merge(tensor_sq[t]);
  }
  finish(batch.data(), batch_total, leaf_scale, leaves, leaf_size, stats);
}

void GradientStatistics::finish(const TensorBatchSums* batch, const det::ExactSum& batch_squares, double leaf_scale,
                                int64_t leaves, int64_t leaf_size, StepStats& stats) {
  SB_CHECK(leaves >= 1 && leaf_size >= 1, "gradient statistics of ", leaves, " leaves of ", leaf_size,
           " sequences: both must be at least 1");
  const double unscale_sq = 1.0 / (leaf_scale * leaf_scale);  // a power of two: exact
  const double b_small = static_cast<double>(leaf_size);
  const double b_big = static_cast<double>(leaves) * b_small;
  // |G_small|² of a sum of squares (leaf gradients carry the loss scale squared).
  auto leaf_mean = [&](const det::ExactSum& s) { return s.to_f64() * unscale_sq / static_cast<double>(leaves); };

  read_leaves();
  det::ExactSum leaf_total;
  stats.tensors.assign(leaf_sq_.size(), TensorStats{});
  for (size_t t = 0; t < leaf_sq_.size(); ++t) {
    TensorStats& ts = stats.tensors[t];
    leaf_total.merge(leaf_sq_[t]);
    const double leaf_sq = leaf_mean(leaf_sq_[t]);
    ts.leaf_sq_mean = static_cast<float>(leaf_sq);
    ts.update_rms = ts.update_weight_ratio = ts.ortho_error = kNaNf;
    if (batch == nullptr) {
      ts.grad_norm = ts.grad_max = ts.grad_mean = ts.batch_sq = kNaNf;
      ts.grad_sq_est = ts.trace_est = ts.noise_scale = kNaNf;
      continue;
    }
    const TensorBatchSums& b = batch[t];
    ts.grad_norm = b.norm;
    ts.grad_max = b.max_abs;
    ts.grad_mean = b.mean;
    const NoiseEstimate e = estimate_noise(leaf_sq, b.sq, b_small, b_big);
    ts.batch_sq = static_cast<float>(b.sq);
    ts.grad_sq_est = static_cast<float>(e.grad_sq);
    ts.trace_est = static_cast<float>(e.trace);
    ts.noise_scale = static_cast<float>(e.noise_scale);
  }

  const double leaf_sq = leaf_mean(leaf_total);
  stats.leaf_sq_mean = static_cast<float>(leaf_sq);
  if (batch == nullptr) {
    stats.batch_sq = stats.grad_sq_est = stats.trace_est = stats.noise_scale = kNaNf;
    return;
  }
  const double batch_sq = batch_squares.to_f64();
  const NoiseEstimate e = estimate_noise(leaf_sq, batch_sq, b_small, b_big);
  stats.batch_sq = static_cast<float>(batch_sq);
  stats.grad_sq_est = static_cast<float>(e.grad_sq);
  stats.trace_est = static_cast<float>(e.trace);
  stats.noise_scale = static_cast<float>(e.noise_scale);
}

}  // namespace sb
