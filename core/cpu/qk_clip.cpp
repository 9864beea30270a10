// QK-clip's two ops on the CPU (Backend::qk_max_keys, qk_clip_scale; formulas in ops/qk_clip.hpp),
// bitwise equal to core/cuda/qk_clip.cu: OpenMP over (sequence, head) pairs, each pair's max of
// ordered integer keys on one thread, then merged per head in pair order (a max: any order gives
// the same key); the scaling elementwise.
#include <algorithm>
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/qk_clip.hpp"

namespace sb::cpu {

void CpuBackend::qk_max_keys(int32_t* keys, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const ptrdiff_t ld = 3 * static_cast<ptrdiff_t>(C);
  const float scale = ops::attention_scale(hs);
  std::vector<int32_t> part(static_cast<size_t>(B) * NH);  // (B, NH) max keys
#pragma omp parallel for schedule(static)
  for (int bh = 0; bh < B * NH; ++bh) {
    const int b = bh / NH, h = bh % NH;
    const float* q0 = qkv + static_cast<ptrdiff_t>(b) * T * ld + h * hs;  // (T, ld)
    int32_t best = ops::no_logit_key();
    for (int t = 0; t < T; ++t) best = std::max(best, ops::qk_row_max_key(q0 + t * ld, q0 + C, ld, t, hs, scale));
    part[static_cast<size_t>(bh)] = best;
  }
  for (int bh = 0; bh < B * NH; ++bh) keys[bh % NH] = std::max(keys[bh % NH], part[static_cast<size_t>(bh)]);
}

void CpuBackend::qk_clip_scale(float* x, int64_t n, float factor) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = ops::qk_clip_apply(x[i], factor);
}

}  // namespace sb::cpu
