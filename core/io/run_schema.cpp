// run_file.hpp: the schema shared by the writer, the reader and docs/FORMAT.md — the tensor table
// and the series columns, each bound to the StepResult field it records. A column's dtype is
// deduced from the field's type, so the file holds exactly the bits the trainer computed.
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "samebits/core/io/run_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::run {
namespace {

template <class T>
void put(std::vector<std::byte>& out, T value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

// The file type of a StepStats member (bool is stored as u8).
template <class T>
constexpr h5::DType stored_dtype() {
  if constexpr (std::is_same_v<T, bool>) return h5::DType::u8;
  else return h5::dtype_of<T>();
}

template <auto Member>
void append_stat(const StepResult& r, std::size_t, std::vector<std::byte>& out) {
  using T = std::remove_cvref_t<decltype(r.stats.*Member)>;
  if constexpr (std::is_same_v<T, bool>) put<uint8_t>(out, r.stats.*Member ? 1 : 0);
  else put<T>(out, r.stats.*Member);
}

template <auto Member>
SeriesColumn stat(std::string_view path, std::string_view help) {
  using T = std::remove_cvref_t<decltype(std::declval<StepStats>().*Member)>;
  return {path, stored_dtype<T>(), Width::one, help, true, &append_stat<Member>};
}

// Per-tensor statistics: NaN columns when the trainer ran without statistics.
template <float TensorStats::*Member>
void append_tensor_stat(const StepResult& r, std::size_t tensors, std::vector<std::byte>& out) {
  for (std::size_t t = 0; t < tensors; ++t) {
    put<float>(out, t < r.stats.tensors.size() ? r.stats.tensors[t].*Member : std::numeric_limits<float>::quiet_NaN());
  }
}

template <float TensorStats::*Member>
SeriesColumn tensor_stat(std::string_view path, std::string_view help) {
  return {path, h5::DType::f32, Width::tensors, help, true, &append_tensor_stat<Member>};
}

// Fingerprints: zeros when the trainer ran without them.
void append_fingerprints(const std::vector<uint64_t>& fps, std::size_t tensors, std::vector<std::byte>& out) {
  for (std::size_t t = 0; t < tensors; ++t) put<uint64_t>(out, t < fps.size() ? fps[t] : 0);
}

std::vector<SeriesColumn> make_columns() {
  using S = StepStats;
  using T = TensorStats;
  return {
      stat<&S::step>("series/step", "steps done, this one included: 1, 2, …"),
      stat<&S::loss>("series/loss", "training loss: exact mean of the per-token losses of the step's leaves"),
      stat<&S::val_loss>("series/val_loss", "validation loss after the step; NaN where not evaluated"),
      stat<&S::lr_factor>("series/lr_factor", "the schedule's multiplier"),
      stat<&S::lr>("series/lr", "learning rate of the Muon group (of every tensor under adamw)"),
      stat<&S::adam_lr>("series/adam_lr", "learning rate of the AdamW group"),
      stat<&S::muon_momentum>("series/muon_momentum", "Muon momentum μ of the step"),
      stat<&S::grad_norm>("series/grad_norm", "global gradient norm before clipping (NaN: skipped step)"),
      stat<&S::clip_scale>("series/clip_scale", "factor clipping multiplied the gradient by (1: not clipped)"),
      stat<&S::loss_scale>("series/loss_scale", "fp16 loss scale the step used (1 in fp32/bf16)"),
      stat<&S::skipped>("series/skipped", "1: fp16 overflow, no update"),
      stat<&S::tokens>("series/tokens", "tokens trained on in the step"),
      stat<&S::tokens_seen>("series/tokens_seen", "tokens of every step so far"),
      stat<&S::leaf_sq_mean>("series/leaf_sq_mean", "|G_small|²: mean over leaves of ‖g_l‖² (whole model)"),
      stat<&S::batch_sq>("series/batch_sq", "|G_big|²: ‖G‖² of the batch gradient (whole model)"),
      stat<&S::grad_sq_est>("series/grad_sq_est", "|G|² estimate (McCandlish et al. 2018)"),
      stat<&S::trace_est>("series/trace_est", "tr(Σ) estimate"),
      stat<&S::noise_scale>("series/noise_scale", "gradient noise scale B_simple = tr(Σ)/|G|², in sequences"),
      tensor_stat<&T::grad_norm>("series/per_tensor/grad_norm", "‖G_t‖₂ before clipping"),
      tensor_stat<&T::grad_max>("series/per_tensor/grad_max", "max |G_t[i]|"),
      tensor_stat<&T::grad_mean>("series/per_tensor/grad_mean", "Σ G_t[i] / numel"),
      tensor_stat<&T::update_rms>("series/per_tensor/update_rms", "RMS of the optimizer update"),
      tensor_stat<&T::update_weight_ratio>("series/per_tensor/update_weight_ratio", "‖update‖ / ‖W‖"),
      tensor_stat<&T::ortho_error>("series/per_tensor/ortho_error",
                                   "Newton–Schulz orthogonality error (NaN for AdamW tensors)"),
      tensor_stat<&T::leaf_sq_mean>("series/per_tensor/leaf_sq_mean", "|G_small|² of the tensor"),
      tensor_stat<&T::batch_sq>("series/per_tensor/batch_sq", "|G_big|² of the tensor"),
      tensor_stat<&T::grad_sq_est>("series/per_tensor/grad_sq_est", "|G|² estimate of the tensor"),
      tensor_stat<&T::trace_est>("series/per_tensor/trace_est", "tr(Σ) estimate of the tensor"),
      tensor_stat<&T::noise_scale>("series/per_tensor/noise_scale", "B_simple of the tensor"),
      {"series/param_fingerprint", h5::DType::u64, Width::tensors, "XXH3-64 of each tensor's parameters after the step",
       true,
       [](const StepResult& r, std::size_t n, std::vector<std::byte>& out) {
         append_fingerprints(r.param_fingerprints, n, out);
       }},
      {"series/grad_fingerprint", h5::DType::u64, Width::tensors,
       "XXH3-64 of each tensor's batch gradient (unscaled, before clipping); 0 on a skipped step", true,
       [](const StepResult& r, std::size_t n, std::vector<std::byte>& out) {
         append_fingerprints(r.grad_fingerprints, n, out);
       }},
      {"series/qk_max_logit", h5::DType::f32, Width::heads,
       "QK-clip (optim.qk_clip > 0 only): the step's largest attention logit S_h of every head, layer-major", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (float s : r.stats.qk_max_logits) put<float>(out, s);
       },
       true},
      {"series/qk_clipped", h5::DType::i64, Width::one,
       "QK-clip (optim.qk_clip > 0 only): heads whose W_q, W_k rows the step rescaled (S_h > τ)", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) { put<int64_t>(out, r.stats.qk_clipped); },
       true},
      {"series/moe_tokens", h5::DType::i64, Width::experts,
       "Mixture-of-Experts runs only: the step's selections of each routed expert, block-major", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (int64_t n : r.stats.moe_tokens) put<int64_t>(out, n);
       },
       false, true},
      {"series/moe_aux_loss", h5::DType::f64, Width::moe_blocks,
       "Mixture-of-Experts runs only: the mean of the leaves' load-balancing losses (with the coefficient)", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (double v : r.stats.moe_aux_loss) put<double>(out, v);
       },
       false, true},
      {"series/moe_entropy", h5::DType::f64, Width::moe_blocks,
       "Mixture-of-Experts runs only: the mean router entropy of the step's tokens (nats)", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (double v : r.stats.moe_entropy) put<double>(out, v);
       },
       false, true},
      {"series/moe_route_flips", h5::DType::i64, Width::moe_blocks,
       "Mixture-of-Experts runs only: the step's tokens whose expert set under the updated router differs "
       "from the set they were trained with (-1: statistics off)",
       true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (int64_t n : r.stats.moe_route_flips) put<int64_t>(out, n);
       },
       false, true},
      {"series/moe_bias", h5::DType::f32, Width::experts,
       "Mixture-of-Experts runs only: each routed expert's auxiliary-loss-free bias after the step, block-major", true,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (float b : r.stats.moe_bias) put<float>(out, b);
       },
       false, true},
      {"series/comm_bytes", h5::DType::u64, Width::collectives,
       "payload bytes this rank passed to each collective kind in the step", false,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (uint64_t b : r.comm.bytes) put<uint64_t>(out, b);
       }},
      {"series/comm_calls", h5::DType::u64, Width::collectives, "collective calls of each kind in the step", false,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) {
         for (uint64_t c : r.comm.calls) put<uint64_t>(out, c);
       }},
      {"series/bytes_to_host", h5::DType::u64, Width::one,
       "bytes the backend copied from its memory to the host in the step (Backend::host_traffic)", false,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) { put<uint64_t>(out, r.host.to_host); }},
      {"series/bytes_from_host", h5::DType::u64, Width::one,
       "bytes the backend copied from the host to its memory in the step", false,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) { put<uint64_t>(out, r.host.from_host); }},
      {"timing/step_seconds", h5::DType::f64, Width::one,
       "wall time of the step (not reproducible: the one dataset outside the run's content)", false,
       [](const StepResult& r, std::size_t, std::vector<std::byte>& out) { put<double>(out, r.seconds); }},
  };
}

}  // namespace

std::vector<TensorInfo> tensor_infos(const std::vector<ParamView>& layout) {
  std::vector<TensorInfo> out;
  out.reserve(layout.size());
  for (const ParamView& p : layout) out.push_back({p.name, p.shape, p.offset, p.numel});
  return out;
}

uint64_t flat_size(const std::vector<TensorInfo>& tensors) {
  uint64_t n = 0;
  for (const TensorInfo& t : tensors) {
    n = std::max<uint64_t>(n, t.offset + (t.numel + kParamAlign - 1) / kParamAlign * kParamAlign);
  }
  return n;
}

std::string_view to_string(Status status) {
  switch (status) {
    case Status::running: return "running";
    case Status::finished: return "finished";
    case Status::failed: return "failed";
  }
  SB_FAIL("unknown run status ", static_cast<int>(status));
}

SeriesShape series_shape(const std::vector<TensorInfo>& tensors, int64_t qk_n_head) {
  SeriesShape shape{tensors.size(), 0};
  const std::string router = ".moe.router.w";
  for (const TensorInfo& t : tensors) {
    if (t.name.size() <= router.size() || t.name.compare(t.name.size() - router.size(), router.size(), router) != 0)
      continue;
    SB_CHECK(t.shape.size() == 2 && t.shape[0] >= 1, "tensor ", t.name, " is not a router of (experts, C)");
    shape.experts += std::size_t(t.shape[0]);
    ++shape.moe_blocks;
  }
  if (qk_n_head == 0) return shape;
  std::size_t blocks = 0;
  for (const TensorInfo& t : tensors) {
    if (t.name != "h." + std::to_string(blocks) + ".attn.qkv.w") continue;
    SB_CHECK(t.shape.size() == 2 && t.shape[1] >= 1 && qk_n_head >= 1 && qk_n_head <= t.shape[1] &&
                 t.shape[1] % qk_n_head == 0,
             "QK-clip columns of ", qk_n_head, " heads per block, but tensor ", t.name, " has shape (", t.shape[0],
             t.shape.size() == 2 ? ", " + std::to_string(t.shape[1]) : std::string(),
             "): the heads must divide its width C");
    ++blocks;
  }
  SB_CHECK(blocks >= 1, "QK-clip columns of ", qk_n_head,
           " heads per block, but the tensor table has no "
           "h.0.attn.qkv.w");
  shape.heads = blocks * std::size_t(qk_n_head);
  return shape;
}

uint64_t column_values(const SeriesColumn& c, const SeriesShape& shape) {
  switch (c.width) {
    case Width::one: return 1;
    case Width::tensors: return shape.tensors;
    case Width::collectives: return kCollectiveKinds;
    case Width::heads: return shape.heads;
    case Width::experts: return shape.experts;
    case Width::moe_blocks: return shape.moe_blocks;
  }
  SB_FAIL("unknown series width ", static_cast<int>(c.width));
}

const std::vector<SeriesColumn>& series_columns() {
  static const std::vector<SeriesColumn> columns = make_columns();
  return columns;
}

std::string step_name(int64_t step) {
  SB_CHECK(step >= 0, "step ", step, " must not be negative");
  std::string digits = std::to_string(step);
  if (digits.size() < 6) digits.insert(0, 6 - digits.size(), '0');
  return "step_" + digits;
}

}  // namespace sb::run
