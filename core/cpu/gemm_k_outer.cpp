// The canonical GEMM for long k into a C that stays in cache (the head's dX = dlogits·W, k = the
// vocabulary; the layers' dX at GPT-2 width, k = 3C or 4C). Packing all of op(A) and op(B) first
// writes and reads back (m + n)·k floats from memory; here they are packed one k-block of
// kOuterBlock at a time into buffers that stay in cache, and every tile of C continues its chains
// block by block (load: C holds them in fp32 between blocks, as between the KC blocks of the
// full driver). The same chains (rule 1), the same bits; only the order of the memory traffic.
#include <vector>

#include "gemm_tile.hpp"

namespace sb::cpu::gemm {
namespace {

constexpr int kOuterBlock = 256;
constexpr size_t kOuterMaxC = size_t{1} << 20;       // bytes of C held in cache across the blocks
constexpr size_t kOuterMinPacked = size_t{4} << 20;  // bytes of packed operands that call for it

}  // namespace

bool use_k_outer(int m, int n, int k) {
  const size_t c_bytes = static_cast<size_t>(m) * n * sizeof(float);
  const size_t packed_bytes = (static_cast<size_t>(m) + n) * k * sizeof(float);
  return k > 2 * kOuterBlock && c_bytes <= kOuterMaxC && packed_bytes >= kOuterMinPacked;
}

void gemm_k_outer(const ops::GemmProblem& g) {
  const int mp = (g.m + MR - 1) / MR, np = (g.n + NR - 1) / NR;
  const size_t a_panel = static_cast<size_t>(kOuterBlock) * MR, b_panel = static_cast<size_t>(kOuterBlock) * NR;
  thread_local std::vector<float> packed;
  if (packed.size() < a_panel * mp + b_panel * np) packed.resize(a_panel * mp + b_panel * np);
  float* const apack = packed.data();
  float* const bpack = packed.data() + a_panel * mp;
  const Packers pack = packers(g.precision);
  const int tiles = mp * np;
#pragma omp parallel
  for (int p0 = 0; p0 < g.k; p0 += kOuterBlock) {
    const int kb = std::min(kOuterBlock, g.k - p0);
    const float* a_p0 = g.a + static_cast<size_t>(p0) * (g.ta == Trans::no ? 1 : g.lda);
    const float* b_p0 = g.b + static_cast<size_t>(p0) * (g.tb == Trans::no ? g.ldb : 1);
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < mp; ++ip) pack.a(apack + ip * a_panel, g.ta, a_p0, g.lda, ip * MR, g.m, kb);
#pragma omp for schedule(static)
    for (int jp = 0; jp < np; ++jp) pack.b(bpack + jp * b_panel, g.tb, b_p0, g.ldb, jp * NR, g.n, kb);
      // Column panel outer (its B block stays in L1 across the row panels); the barrier at the end
      // keeps the buffers until every tile has read them.
#pragma omp for schedule(static)
    for (int t = 0; t < tiles; ++t) {
      const int jp = t / mp, ip = t % mp;
      run_tile(kb, apack + ip * a_panel, MR, bpack + jp * b_panel, g.c, g.ldc, ip * MR, jp * NR, g.m, g.n,
               g.accumulate || p0 > 0);
    }
  }
}

}  // namespace sb::cpu::gemm
