// QK-clip (optim/qk_clip.hpp). Determinism: every logit is the forward's canonical dot; the max is
// over ordered integer keys (order-free), per (sequence, head) pair on OpenMP threads and then
// merged in a fixed order; the factors are fp64 functions of τ and S rounded once.
#include "samebits/core/optim/qk_clip.hpp"

#include <algorithm>
#include <string>

#include "samebits/core/ops/qk_clip.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/det/error.hpp"

namespace sb {

QkMaxLogits::QkMaxLogits(int n_layer, int n_head)
    : n_layer_(n_layer), n_head_(n_head), keys_(static_cast<size_t>(n_layer) * n_head) {
  clear();
}

void QkMaxLogits::clear() {
  std::fill(keys_.begin(), keys_.end(), ops::logit_key(det::float_of_bits(0xff800000u)));
}

void QkMaxLogits::add(int layer, const float* qkv, int B, int T, int C) {
  SB_CHECK(layer >= 0 && layer < n_layer_, "QK-clip: block ", layer, " outside 0 … ", n_layer_ - 1);
  const int hs = C / n_head_, ld = 3 * C;
  const float scale = ops::attention_scale(hs);
  std::vector<int32_t> part(static_cast<size_t>(B) * n_head_);  // (B, n_head) max keys
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * n_head_; ++bh) {
    const int b = bh / n_head_, h = bh % n_head_;
    const float* q0 = qkv + static_cast<size_t>(b) * T * ld + h * hs;  // (T, ld)
    const float* k0 = q0 + C;
    int32_t best = ops::logit_key(det::float_of_bits(0xff800000u));
    for (int t = 0; t < T; ++t)
      for (int j = 0; j <= t; ++j)
        best = std::max(best, ops::logit_key(ops::qk_logit(q0 + t * ld, k0 + j * ld, hs, scale)));
    part[static_cast<size_t>(bh)] = best;
  }
  for (int bh = 0; bh < B * n_head_; ++bh) {
    int32_t& k = keys_[static_cast<size_t>(layer) * n_head_ + bh % n_head_];
    k = std::max(k, part[static_cast<size_t>(bh)]);
  }
}

void QkMaxLogits::merge(const std::vector<int32_t>& other) {
  SB_CHECK(other.size() == keys_.size(), "QK-clip: ", other.size(), " maxima to merge, expected ",
           keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) keys_[i] = std::max(keys_[i], other[i]);
}

std::vector<float> QkMaxLogits::values() const {
  std::vector<float> out(keys_.size());
  for (size_t i = 0; i < keys_.size(); ++i) out[i] = ops::logit_of_key(keys_[i]);
  return out;
}

float qk_clip_factor(float max_logit, double tau) {
  const double s = max_logit;
  if (!(s > tau)) return 1.0f;
  return static_cast<float>(sqrt_f64(tau / s));
}

int apply_qk_clip(float* weights, const std::vector<ParamView>& layout, const GPTConfig& model,
                  const std::vector<float>& max_logits, double tau) {
  const int C = model.n_embd, NH = model.n_head, hs = C / NH;
  SB_CHECK(max_logits.size() == static_cast<size_t>(model.n_layer) * NH, "QK-clip: ",
           max_logits.size(), " maxima for ", model.n_layer, " blocks of ", NH, " heads");
  const auto find = [&](const std::string& name) -> const ParamView* {
    for (const ParamView& p : layout)
      if (p.name == name) return &p;
    return nullptr;
  };
  int clipped = 0;
  for (int l = 0; l < model.n_layer; ++l) {
    const std::string prefix = "h." + std::to_string(l) + ".attn.qkv.";
    const ParamView* w = find(prefix + "w");
    SB_CHECK(w != nullptr, "QK-clip: the layout has no ", prefix, "w");
    const ParamView* b = find(prefix + "b");
    for (int h = 0; h < NH; ++h) {
      const float gamma = qk_clip_factor(max_logits[static_cast<size_t>(l) * NH + h], tau);
      if (gamma == 1.0f) continue;
      ++clipped;
      for (int block : {0, 1}) {  // Q rows, then K rows of head h
        const size_t row0 = static_cast<size_t>(block) * C + static_cast<size_t>(h) * hs;
        float* rows = weights + w->offset + row0 * C;  // (hs, C)
        for (size_t i = 0; i < static_cast<size_t>(hs) * C; ++i)
          rows[i] = ops::qk_clip_apply(rows[i], gamma);
        if (b != nullptr) {
          float* bias = weights + b->offset + row0;  // (hs)
          for (int i = 0; i < hs; ++i) bias[i] = ops::qk_clip_apply(bias[i], gamma);
        }
      }
    }
  }
  return clipped;
}

}  // namespace sb
