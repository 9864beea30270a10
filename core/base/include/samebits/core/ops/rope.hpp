// Rotary position embeddings (Su et al. 2021) in the rotate-half layout of Llama and GPT-NeoX
// (Hugging Face's apply_rotary_pos_emb), host and device, one definition with a fixed operation
// order and samebits exp, log, sin and cos. In a head of hd values the pair (i, i + hd/2), i < hd/2,
// of position t is rotated by the angle t·f_i, f_i = θ^(−2i/hd). Bitwise equal on every backend.
#pragma once
#include "samebits/det/hd.hpp"
#include "samebits/det/math.hpp"

namespace sb::ops {

// f_i = 1 / exp((2i/hd)·ln θ), each step rounded to fp32.
SB_HD float rope_inv_freq(int i, int hd, float theta) {
  const float exponent = static_cast<float>(2 * i) / static_cast<float>(hd);
  return 1.0f / det::exp(exponent * det::log(theta));
}

// The table entry (cos, sin) of position t, pair i: the angle fl32(t·f_i).
SB_HD float rope_angle(int t, int i, int hd, float theta) {
  return static_cast<float>(t) * rope_inv_freq(i, hd, theta);
}
SB_HD float rope_cos(int t, int i, int hd, float theta) { return det::cos(rope_angle(t, i, hd, theta)); }
SB_HD float rope_sin(int t, int i, int hd, float theta) { return det::sin(rope_angle(t, i, hd, theta)); }

// The pair (x, y) = (v[i], v[i + hd/2]) rotated: (x·c − y·s, y·c + x·s).
SB_HD float rope_low(float x, float y, float c, float s) { return x * c - y * s; }
SB_HD float rope_high(float x, float y, float c, float s) { return y * c + x * s; }
// Its backward, the rotation by −angle of the pair's gradient (dx, dy): (dx·c + dy·s, dy·c − dx·s).
SB_HD float rope_low_backward(float dx, float dy, float c, float s) { return dx * c + dy * s; }
SB_HD float rope_high_backward(float dx, float dy, float c, float s) { return dy * c - dx * s; }

}  // namespace sb::ops
