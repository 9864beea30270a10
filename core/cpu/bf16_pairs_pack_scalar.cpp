// The bf16 pair order's scalar packer: ops::bf16_pair_operand element by element (pair_word), the
// reference the SIMD packers equal word for word.
#include "bf16_pairs.hpp"

namespace sb::cpu::pairs {

void pack_scalar(const Lines& src, int w, uint32_t* out) {
  const int kp = (src.k + 1) / 2;
  const size_t lane_step = src.along ? src.ld : 1, p_step = src.along ? 1 : src.ld;
  for (int l = 0; l < src.panels(w) * w; ++l) {
    const float* line = l < src.lanes ? src.x + l * lane_step : nullptr;
    for (int pp = 0; pp < kp; ++pp)
      out[src.at(w, l, pp)] = line != nullptr ? pair_word(line, p_step, pp, src.k, src.pad) : 0;
  }
}

}  // namespace sb::cpu::pairs
