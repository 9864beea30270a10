// The [perturb] section (config.hpp PerturbConfig): one element of one weight tensor moved k
// representable fp32 values, applied by the Trainer at the start of step perturb.step + 1.
// Contract: a pure function of the weights' bits and the config — the same element, the same new
// bits on every backend, thread count and rank (each rank applies it to its replica).
#pragma once
#include <cstdint>
#include <string>

#include "samebits/core/config.hpp"
#include "samebits/core/model/gpt.hpp"

namespace sb {

// x moved k representable fp32 values along the float line (k > 0 up, k < 0 down). ±0 are one
// point of that line: 1 up from either is the smallest positive subnormal, 1 down the smallest
// negative one, and a step landing on zero gives +0. Throws sb::Error (naming perturb.ulps) when x
// is ±inf or NaN, or when the result would pass the largest finite float (no saturation to inf).
float step_ulps(float x, int64_t k);

// True when the perturbation is on and belongs before the step that follows `steps_done` steps.
bool perturbation_due(const PerturbConfig& perturb, int64_t steps_done);

// What apply_perturbation changed, for logs and tests.
struct PerturbationApplied {
  std::string tensor;
  int64_t index = 0;  // in the (full) tensor
  size_t flat = 0;    // in this rank's flat weight buffer (0, with before = after = 0, on a
                      // tensor-parallel rank whose shard does not hold the element)
  float before = 0;
  float after = 0;
};

// Moves element perturb.index of tensor perturb.tensor of `model`'s weights by perturb.ulps: one
// element copied from the backend, stepped on the host, copied back (under tensor parallelism by
// the rank whose shard holds it; perturb.index is the full tensor's). Throws sb::Error for an
// unknown tensor, an index out of range, or a non-finite element / result.
PerturbationApplied apply_perturbation(const PerturbConfig& perturb, GPT& model);

// "h.0.attn.qkv.w[17] +1 ULP before step 6 (after 5 steps)", or "off".
std::string perturbation_text(const PerturbConfig& perturb);

}  // namespace sb
