// QK-clip (optim/qk_clip.hpp): the step's keys in the backend's memory (Backend::qk_max_keys), the
// factors on the host, the rescaling by the backend (Backend::qk_clip_scale). Determinism: every
// logit is the forward's canonical dot; the max is over ordered integer keys (order-free); the
// factors are fp64 functions of τ and S rounded once.
#include "samebits/core/optim/qk_clip.hpp"

#include <algorithm>
#include <string>

#include "samebits/core/exact_norm.hpp"
#include "samebits/core/ops/qk_clip.hpp"
#include "samebits/det/error.hpp"

namespace sb {

QkMaxLogits::QkMaxLogits(Backend& backend, int n_layer, int n_head)
    : be_(backend),
      n_layer_(n_layer),
      n_head_(n_head),
      keys_(backend.alloc(DType::i32, {static_cast<int64_t>(n_layer) * n_head})) {
  clear();
}

void QkMaxLogits::clear() {
  const std::vector<int32_t> none(static_cast<size_t>(n_layer_) * n_head_, ops::no_logit_key());
  be_.copy_from_host(keys_.data(), none.data(), none.size() * sizeof(int32_t));
}

void QkMaxLogits::add(int layer, const float* qkv, int B, int T, int C) {
  SB_CHECK(layer >= 0 && layer < n_layer_, "QK-clip: block ", layer, " outside 0 … ", n_layer_ - 1);
  be_.qk_max_keys(keys_.data_as<int32_t>() + static_cast<size_t>(layer) * n_head_, qkv, B, T, C, n_head_);
}

std::vector<int32_t> QkMaxLogits::keys() const {
  std::vector<int32_t> out(static_cast<size_t>(n_layer_) * n_head_);
  be_.copy_to_host(out.data(), keys_.data(), out.size() * sizeof(int32_t));
  return out;
}

void QkMaxLogits::merge(std::vector<int32_t>& into, const std::vector<int32_t>& other) {
  SB_CHECK(other.size() == into.size(), "QK-clip: ", other.size(), " maxima to merge, expected ", into.size());
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], other[i]);
}

std::vector<float> QkMaxLogits::values(const std::vector<int32_t>& keys) {
  std::vector<float> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out[i] = ops::logit_of_key(keys[i]);
  return out;
}

float qk_clip_factor(float max_logit, double tau) {
  const double s = max_logit;
  if (!(s > tau)) return 1.0f;
  return static_cast<float>(sqrt_f64(tau / s));
}

int apply_qk_clip(Backend& backend, float* weights, const std::vector<ParamView>& layout, const GPTConfig& model,
                  const std::vector<float>& max_logits, double tau) {
  const int C = model.n_embd, NH = model.n_head, hs = C / NH;
  SB_CHECK(max_logits.size() == static_cast<size_t>(model.n_layer) * NH, "QK-clip: ", max_logits.size(), " maxima for ",
           model.n_layer, " blocks of ", NH, " heads");
  const auto find = [&](const std::string& name) -> const ParamView* {
    for (const ParamView& p : layout)
      if (p.name == name) return &p;
    return nullptr;
  };
  int clipped = 0;
  for (int l = 0; l < model.n_layer; ++l) {
    const std::string prefix = "h." + std::to_string(l) + ".attn.qkv.";
    const ParamView* w = find(prefix + "w");  // null: a block of another pipeline stage (counted, not held)
    const ParamView* b = find(prefix + "b");
    for (int h = 0; h < NH; ++h) {
      const float gamma = qk_clip_factor(max_logits[static_cast<size_t>(l) * NH + h], tau);
      if (gamma == 1.0f) continue;
      ++clipped;
      if (w == nullptr) continue;
      for (int block : {0, 1}) {  // Q rows, then K rows of head h
        const size_t row0 = static_cast<size_t>(block) * C + static_cast<size_t>(h) * hs;
        backend.qk_clip_scale(weights + w->offset + row0 * C, static_cast<int64_t>(hs) * C, gamma);  // (hs, C)
        if (b != nullptr) backend.qk_clip_scale(weights + b->offset + row0, hs, gamma);              // (hs)
      }
    }
  }
  return clipped;
}

}  // namespace sb
