// The [perturb] section's checks against the model's tensor table (config.hpp
// validate_perturbation), part of validate(config): a perturbation names an element that exists,
// moves it, and happens inside the run.
#include "samebits/core/config.hpp"
#include "samebits/core/gpt_shape.hpp"
#include "samebits/det/error.hpp"

namespace sb {

void validate_perturbation(const PerturbConfig& p, const GPTConfig& model, int64_t steps) {
  if (!p.enabled()) {
    const PerturbConfig off;
    SB_CHECK(p.index == off.index && p.ulps == off.ulps && p.step == off.step, "config perturb.index=", p.index,
             ", perturb.ulps=", p.ulps, ", perturb.step=", p.step,
             " are set but perturb.tensor is empty (no perturbation); name the tensor to perturb, "
             "e.g. perturb.tensor=h.0.attn.qkv.w, or remove them");
    return;
  }
  const std::vector<ParamView> layout = gpt_param_layout(model);
  const ParamView* param = find_param(layout, p.tensor);
  SB_CHECK(param != nullptr, "config perturb.tensor='", p.tensor,
           "' is not a tensor of this model; "
           "valid names: ",
           param_names(layout));
  SB_CHECK(p.index >= 0 && uint64_t(p.index) < param->numel, "config perturb.index=", p.index, " is outside tensor ",
           p.tensor, ", which has ", param->numel, " elements (index 0 … ", param->numel - 1, ")");
  SB_CHECK(p.ulps != 0,
           "config perturb.ulps=0 changes nothing; use a signed non-zero number of "
           "ULPs such as 1 or -1, or leave perturb.tensor empty");
  SB_CHECK(p.step >= 0 && p.step < steps, "config perturb.step=", p.step, " must lie in [0, train.steps=", steps,
           "): the perturbation is applied after perturb.step steps, before the next one");
}

}  // namespace sb
