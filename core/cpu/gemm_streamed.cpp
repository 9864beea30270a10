// The canonical GEMM when one operand is far larger than the other (the head's logits = x·Wᵀ, n =
// the vocabulary; its dW = dlogitsᵀ·x, m = the vocabulary; the layers' forward at GPT-2 width): the
// small one is packed whole (it stays in cache), the large one a block of kStreamPanels panels at a
// time into the thread's own buffer just before that block's tiles. Each tile's chains are the full
// driver's (rule 1: k ascending, continued across the KC blocks): the same bits.
#include <vector>

#include "gemm_tile.hpp"

namespace sb::cpu::gemm {
namespace {

constexpr int kStreamPanels = 8;
constexpr size_t kStreamMaxSmall = size_t{1} << 20;  // bytes of the packed operand held in cache
constexpr size_t kStreamMinLarge = size_t{4} << 20;  // bytes of the packed operand that call for it

// The panels of one operand: `count` panels of `floats` floats each.
struct Side {
  int count;
  size_t floats;
};

}  // namespace

StreamSide stream_side(int m, int n, int k) {
  const size_t a_bytes = static_cast<size_t>(m) * k * sizeof(float);
  const size_t b_bytes = static_cast<size_t>(n) * k * sizeof(float);
  if (a_bytes <= kStreamMaxSmall && b_bytes >= kStreamMinLarge) return StreamSide::b;
  if (b_bytes <= kStreamMaxSmall && a_bytes >= kStreamMinLarge) return StreamSide::a;
  return StreamSide::none;
}

void gemm_streamed(StreamSide side, const ops::GemmProblem& g) {
  const int mp = (g.m + MR - 1) / MR, np = (g.n + NR - 1) / NR;
  const size_t a_panel = static_cast<size_t>(g.k) * MR, b_panel = static_cast<size_t>(g.k) * NR;
  const bool on_a = side == StreamSide::a;
  const Packers pack = packers(g.precision);
  const auto pack_a = [&](float* dst, int ip) { pack.a(dst, g.ta, g.a, g.lda, ip * MR, g.m, g.k); };
  const auto pack_b = [&](float* dst, int jp) { pack.b(dst, g.tb, g.b, g.ldb, jp * NR, g.n, g.k); };
  const Side whole = on_a ? Side{np, b_panel} : Side{mp, a_panel};
  const Side streamed = on_a ? Side{mp, a_panel} : Side{np, b_panel};
  thread_local std::vector<float> whole_packed;
  if (whole_packed.size() < whole.floats * whole.count) whole_packed.resize(whole.floats * whole.count);
  float* const wpack = whole_packed.data();
  const int blocks = (streamed.count + kStreamPanels - 1) / kStreamPanels;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int q = 0; q < whole.count; ++q)
      on_a ? pack_b(wpack + q * whole.floats, q) : pack_a(wpack + q * whole.floats, q);
    thread_local std::vector<float> block_packed;  // this thread's block of panels
    if (block_packed.size() < streamed.floats * kStreamPanels) block_packed.resize(streamed.floats * kStreamPanels);
    float* const spack = block_packed.data();
#pragma omp for schedule(static) nowait
    for (int blk = 0; blk < blocks; ++blk) {
      const int q0 = blk * kStreamPanels, q1 = std::min(streamed.count, q0 + kStreamPanels);
      for (int q = q0; q < q1; ++q)
        on_a ? pack_a(spack + (q - q0) * streamed.floats, q) : pack_b(spack + (q - q0) * streamed.floats, q);
      const int ip0 = on_a ? q0 : 0, ip1 = on_a ? q1 : mp, jp0 = on_a ? 0 : q0, jp1 = on_a ? np : q1;
      for (int p0 = 0; p0 < g.k; p0 += KC)
        for (int jp = jp0; jp < jp1; ++jp)
          for (int ip = ip0; ip < ip1; ++ip) {
            const float* ap = on_a ? spack + (ip - ip0) * a_panel : wpack + ip * a_panel;
            const float* bp = on_a ? wpack + jp * b_panel : spack + (jp - jp0) * b_panel;
            run_tile(std::min(KC, g.k - p0), ap + static_cast<size_t>(p0) * MR, MR, bp + static_cast<size_t>(p0) * NR,
                     g.c, g.ldc, ip * MR, jp * NR, g.m, g.n, g.accumulate || p0 > 0);
          }
    }
  }
}

}  // namespace sb::cpu::gemm
