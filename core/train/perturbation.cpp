// The [perturb] section (train/perturbation.hpp): ULP stepping on the fp32 bit pattern and the
// one-element edit of a model's weights (the config's checks: core/base/perturb_config.cpp).
// Determinism: integer arithmetic on the bits only; the element is read from and written to the
// backend by a 4-byte copy, so every backend and every rank writes the same new bits.
#include "samebits/core/train/perturbation.hpp"

#include <cstring>
#include <limits>

#include "samebits/core/model/tp_layout.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

constexpr int64_t kMaxFiniteOrdered = 0x7f7fffff;  // the bits of FLT_MAX: the top of the line

// The float line as integers: ±0 → 0, negative floats below it, monotonic in value.
int64_t ordered(uint32_t bits) { return (bits & 0x80000000u) ? -int64_t(bits & 0x7fffffffu) : int64_t(bits); }

uint32_t bits_of_ordered(int64_t v) { return v < 0 ? 0x80000000u | uint32_t(-v) : uint32_t(v); }

}  // namespace

float step_ulps(float x, int64_t k) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  SB_CHECK((bits & 0x7f800000u) != 0x7f800000u, "perturb.ulps=", k, ": the element is ", x,
           ", not a finite float; ULP steps are defined on finite values only — choose another "
           "element (perturb.index) or step (perturb.step)");
  const int64_t from = ordered(bits);
  const bool fits = k >= 0 ? k <= kMaxFiniteOrdered - from : k >= -kMaxFiniteOrdered - from;
  SB_CHECK(fits, "perturb.ulps=", k, " moves ", x, " beyond the largest finite float (", k > 0 ? "+" : "-",
           std::numeric_limits<float>::max(), " is ", k > 0 ? kMaxFiniteOrdered - from : kMaxFiniteOrdered + from,
           " ULPs away); use a smaller |perturb.ulps|");
  const uint32_t out_bits = bits_of_ordered(from + k);
  float out;
  std::memcpy(&out, &out_bits, sizeof out);
  return out;
}

bool perturbation_due(const PerturbConfig& perturb, int64_t steps_done) {
  return perturb.enabled() && perturb.step == steps_done;
}

PerturbationApplied apply_perturbation(const PerturbConfig& perturb, GPT& model) {
  const ParamView* param = find_param(model.params(), perturb.tensor);
  SB_CHECK(param != nullptr, "perturb.tensor='", perturb.tensor,
           "' is not a tensor of this model; "
           "valid names: ",
           param_names(model.params()));
  // Under tensor parallelism the index is the full tensor's: one rank of the group holds it.
  const TpLayout& tp = model.tp_layout();
  size_t index = size_t(perturb.index), numel = param->numel;
  const TpSplit* split = nullptr;
  for (size_t t = 0; t < tp.full.size(); ++t)
    if (tp.full[t].name == perturb.tensor) split = &tp.splits[t], numel = tp.full[t].numel;
  SB_CHECK(perturb.index >= 0 && uint64_t(perturb.index) < numel, "perturb.index=", perturb.index,
           " is outside tensor ", perturb.tensor, " (", numel, " elements)");
  PerturbationApplied applied;
  applied.tensor = perturb.tensor;
  applied.index = perturb.index;
  if (split != nullptr && split->sharded) {  // full (outer, extent, inner); rank r holds rows [first(r), …)
    const int64_t i = perturb.index, o = i / (split->extent * split->inner), w = i / split->inner % split->extent;
    const int owner = int(w / split->part);
    if (owner != tp.rank) return applied;  // another rank's element: nothing to do here
    index = size_t((o * split->rows(owner) + (w - split->first(owner))) * split->inner + i % split->inner);
  }
  applied.flat = param->offset + index;
  float* element = model.weights().data_as<float>() + applied.flat;  // backend memory
  Backend& be = model.backend();
  be.copy_to_host(&applied.before, element, sizeof(float));
  applied.after = step_ulps(applied.before, perturb.ulps);
  be.copy_from_host(element, &applied.after, sizeof(float));
  return applied;
}

std::string perturbation_text(const PerturbConfig& p) {
  if (!p.enabled()) return "off";
  std::ostringstream s;
  s << p.tensor << "[" << p.index << "] " << (p.ulps > 0 ? "+" : "") << p.ulps << " ULP"
    << (p.ulps == 1 || p.ulps == -1 ? "" : "s") << " before step " << p.step + 1 << " (after " << p.step << " steps)";
  return s.str();
}

}  // namespace sb
