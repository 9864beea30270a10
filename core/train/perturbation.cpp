// The [perturb] section (train/perturbation.hpp): ULP stepping on the fp32 bit pattern, the
// config's checks against the tensor table, and the one-element edit of a model's weights.
// Determinism: integer arithmetic on the bits only; the element is read from and written to the
// backend by a 4-byte copy, so every backend and every rank writes the same new bits.
#include "samebits/core/train/perturbation.hpp"

#include <cstring>
#include <limits>
#include <sstream>

#include "samebits/det/error.hpp"

namespace sb {
namespace {

constexpr int64_t kMaxFiniteOrdered = 0x7f7fffff;  // the bits of FLT_MAX: the top of the line

// The float line as integers: ±0 → 0, negative floats below it, monotonic in value.
int64_t ordered(uint32_t bits) {
  return (bits & 0x80000000u) ? -int64_t(bits & 0x7fffffffu) : int64_t(bits);
}

uint32_t bits_of_ordered(int64_t v) {
  return v < 0 ? 0x80000000u | uint32_t(-v) : uint32_t(v);
}

const ParamView* find_param(const std::vector<ParamView>& layout, const std::string& name) {
  for (const ParamView& p : layout) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string name_list(const std::vector<ParamView>& layout) {
  std::string out;
  for (const ParamView& p : layout) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace

float step_ulps(float x, int64_t k) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  SB_CHECK((bits & 0x7f800000u) != 0x7f800000u, "perturb.ulps=", k, ": the element is ", x,
           ", not a finite float; ULP steps are defined on finite values only — choose another "
           "element (perturb.index) or step (perturb.step)");
  const int64_t from = ordered(bits);
  const bool fits = k >= 0 ? k <= kMaxFiniteOrdered - from : k >= -kMaxFiniteOrdered - from;
  SB_CHECK(fits, "perturb.ulps=", k, " moves ", x, " beyond the largest finite float (",
           k > 0 ? "+" : "-", std::numeric_limits<float>::max(), " is ",
           k > 0 ? kMaxFiniteOrdered - from : kMaxFiniteOrdered + from,
           " ULPs away); use a smaller |perturb.ulps|");
  const uint32_t out_bits = bits_of_ordered(from + k);
  float out;
  std::memcpy(&out, &out_bits, sizeof out);
  return out;
}

bool perturbation_due(const PerturbConfig& perturb, int64_t steps_done) {
  return perturb.enabled() && perturb.step == steps_done;
}

void validate_perturbation(const PerturbConfig& p, const GPTConfig& model, int64_t steps) {
  if (!p.enabled()) {
    const PerturbConfig off;
    SB_CHECK(p.index == off.index && p.ulps == off.ulps && p.step == off.step, "config perturb.index=",
             p.index, ", perturb.ulps=", p.ulps, ", perturb.step=", p.step,
             " are set but perturb.tensor is empty (no perturbation); name the tensor to perturb, "
             "e.g. perturb.tensor=h.0.attn.qkv.w, or remove them");
    return;
  }
  const std::vector<ParamView> layout = gpt_param_layout(model);
  const ParamView* param = find_param(layout, p.tensor);
  SB_CHECK(param != nullptr, "config perturb.tensor='", p.tensor, "' is not a tensor of this model; "
           "valid names: ", name_list(layout));
  SB_CHECK(p.index >= 0 && uint64_t(p.index) < param->numel, "config perturb.index=", p.index,
           " is outside tensor ", p.tensor, ", which has ", param->numel, " elements (index 0 … ",
           param->numel - 1, ")");
  SB_CHECK(p.ulps != 0, "config perturb.ulps=0 changes nothing; use a signed non-zero number of "
           "ULPs such as 1 or -1, or leave perturb.tensor empty");
  SB_CHECK(p.step >= 0 && p.step < steps, "config perturb.step=", p.step, " must lie in [0, train.steps=",
           steps, "): the perturbation is applied after perturb.step steps, before the next one");
}

PerturbationApplied apply_perturbation(const PerturbConfig& perturb, GPT& model) {
  const ParamView* param = find_param(model.params(), perturb.tensor);
  SB_CHECK(param != nullptr, "perturb.tensor='", perturb.tensor, "' is not a tensor of this model; "
           "valid names: ", name_list(model.params()));
  SB_CHECK(perturb.index >= 0 && uint64_t(perturb.index) < param->numel, "perturb.index=", perturb.index,
           " is outside tensor ", perturb.tensor, " (", param->numel, " elements)");
  PerturbationApplied applied;
  applied.tensor = perturb.tensor;
  applied.index = perturb.index;
  applied.flat = param->offset + size_t(perturb.index);
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
    << (p.ulps == 1 || p.ulps == -1 ? "" : "s") << " before step " << p.step + 1 << " (after "
    << p.step << " steps)";
  return s.str();
}

}  // namespace sb
