// The exact GEMM's driver: cut both operands into int16 digits (exact_pack.cpp), then per MR × NR
// tile of C every digit pair's dot from the kernel, summed exactly in int64 per pair weight and in
// __int128 across weights, and rounded once (ops::exact::exact_element). OpenMP over panels and
// tiles, and over parts of k when C has few tiles; k split across ranks sums the ranks' integer
// dots. Every sum is of integers, so neither the thread count, the k-split, the kernel nor the tile
// order moves a bit.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "exact_gemm.hpp"
#include "samebits/core/ops/exact_gemm.hpp"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu::exact {
namespace {

namespace ex = ops::exact;

constexpr int kMaxWeights = kernel_digits(4).weights();  // pair weights t + u of fp32's 2 digits

// A tile's exact integer dots by digit-pair weight v = t + u: sums[v][e], e = r·NR + column.
struct TileSums {
  int64_t w[kMaxWeights][MR * NR];
  int64_t* operator[](int v) { return w[v]; }
  const int64_t* operator[](int v) const { return w[v]; }
};

// The integer dot of element e (ops::exact::slice_dot over its sums by pair weight).
__int128 tile_dot(const TileSums& sums, int e, ops::exact::Digits dg, bool narrow) {
  return ex::slice_dot(&sums.w[0][e], MR * NR, dg, narrow);
}

// The exact integer dots of tile (ip, jp) over pairs [p0, p1) of k by digit-pair weight:
// sums[v][e] = Σ_{t+u=v} D_tu[e], each pair's dot added in int64 by the kernel.
void tile_sums(const Sliced& sl, Kernel kern, int ip, int jp, int p0, int p1, TileSums& sums) {
  for (int v = 0; v < sl.dg.weights(); ++v) {
    std::fill(sums[v], sums[v] + MR * NR, int64_t{0});
    for (int t = std::max(0, v - sl.dg.count + 1); t <= std::min(v, sl.dg.count - 1); ++t)
      kern(p1 - p0, sl.a_at(ip, t) + static_cast<size_t>(p0) * MR, sl.b_at(jp, v - t) + static_cast<size_t>(p0) * NR,
           sums[v]);
  }
}

// Parts k is cut into for the threads when C has fewer tiles than twice the threads (a small
// m×n with a long k: each thread a part of a tile's k, the parts' integer sums added exactly),
// each part at least kMinPartPairs pairs; 1 inside a parallel region or when it does not pay.
constexpr int kMinPartPairs = 128;
int k_parts(const Sliced& sl) {
  if (omp_in_parallel()) return 1;
  const int threads = omp_get_max_threads(), tiles = sl.mp * sl.np;
  if (tiles >= 2 * threads) return 1;
  return std::max(1, std::min((2 * threads + tiles - 1) / tiles, sl.kp / kMinPartPairs));
}

// Element (i, j) of C from its integer dot S: one rounding, the accumulation, the bias.
void emit(const ops::GemmProblem& g, const Sliced& sl, __int128 S, int i, int j, const float* bias) {
  store_element(g, i, j, S, sl.row_exp[i], sl.col_exp[j], sl.s, sl.row_bad[i] != 0 || sl.col_bad[j] != 0, bias);
}

// Calls f(i, j, e) for the elements of tile (ip, jp) inside C.
template <class F>
void each_element(const ops::GemmProblem& g, int ip, int jp, F f) {
  const int rows = std::min(MR, g.m - ip * MR), cols = std::min(NR, g.n - jp * NR);
  for (int r = 0; r < rows; ++r)
    for (int q = 0; q < cols; ++q) f(ip * MR + r, jp * NR + q, r * NR + q);
}

// Tile (ip, jp) of C from its exact integer dots: one rounding per element (row by row by
// Sliced::round where every dot fits int64).
void round_tile(const ops::GemmProblem& g, const Sliced& sl, int ip, int jp, const TileSums& sums, const float* bias) {
  if (ex::narrow_dot(g.k, sl.s)) {
    const int rows = std::min(MR, g.m - ip * MR), cols = std::min(NR, g.n - jp * NR), j0 = jp * NR;
    for (int r = 0; r < rows; ++r) {
      const int i = ip * MR + r;
      sl.round(&sums.w[0][r * NR], cols, sl.row_exp[i], &sl.col_exp[j0], sl.row_bad[i] != 0, &sl.col_bad[j0],
               g.accumulate, bias != nullptr ? bias + j0 : nullptr, g.c + static_cast<size_t>(i) * g.ldc + j0);
    }
    return;
  }
  each_element(g, ip, jp, [&](int i, int j, int e) { emit(g, sl, tile_dot(sums, e, sl.dg, false), i, j, bias); });
}

// Tile (ip, jp) of C: the exact integer dots, then one rounding per element.
void exact_tile(const ops::GemmProblem& g, const Sliced& sl, Kernel kern, int ip, int jp, const float* bias) {
  TileSums sums;
  tile_sums(sl, kern, ip, jp, 0, sl.kp, sums);
  round_tile(g, sl, ip, jp, sums, bias);
}

// A k-split product's integer dots travel as words summed modulo 2^64: one word (S mod 2^64) when
// the whole product's dots fit int64, else two (S's low 32 bits, and S >> 32), whose sums over
// the group stay exact in int64 and give S = hi·2^32 + lo.
void tile_words(const ops::GemmProblem& g, const Sliced& sl, Kernel kern, int ip, int jp, int words, uint64_t* out) {
  TileSums sums;
  tile_sums(sl, kern, ip, jp, 0, sl.kp, sums);
  each_element(g, ip, jp, [&](int i, int j, int e) {
    uint64_t* w = out + (static_cast<size_t>(i) * g.n + j) * words;
    if (words == 1) {
      w[0] = static_cast<uint64_t>(static_cast<int64_t>(tile_dot(sums, e, sl.dg, true)));
    } else {
      const __int128 S = tile_dot(sums, e, sl.dg, false);
      w[0] = static_cast<uint64_t>(S) & 0xffffffffu;
      w[1] = static_cast<uint64_t>(static_cast<int64_t>(S >> 32));
    }
  });
}
__int128 word_dot(const uint64_t* w, int words) {
  if (words == 1) return static_cast<int64_t>(w[0]);
  return static_cast<__int128>(static_cast<int64_t>(w[1])) * (int64_t{1} << 32) + static_cast<__int128>(w[0]);
}

void check_k(int64_t k) {
  SB_CHECK(k <= ex::kMaxK, "numerics.gemm=exact sums slice products in int32, exact while k·63² < 2³¹: k must be ",
           "at most ", ex::kMaxK, ", got k=", k, "; use numerics.gemm=canonical for this product");
}

// The calling thread's sliced operands, reused across its calls (shared with its team: each team
// thread's own would be empty).
Sliced& calling_thread_slices() {
  thread_local Sliced buffers;
  return buffers;
}

// gemm_exact with each tile's k cut into `parts` (k_parts): every (tile, part)'s integer dots,
// then per tile their exact int64 sum, rounded once — the same integers as one pass over k.
void gemm_exact_k_parts(const ops::GemmProblem& g, const Sliced& sl, Kernel kern, int parts, const float* bias) {
  const int tiles = sl.mp * sl.np;
  thread_local std::vector<TileSums> buffers;  // the calling thread's, reused across its calls
  std::vector<TileSums>& sums = buffers;
  sums.resize(static_cast<size_t>(tiles) * parts);
#pragma omp parallel for schedule(static)
  for (int w = 0; w < tiles * parts; ++w) {
    const int tile = w / parts, part = w % parts;
    tile_sums(sl, kern, tile % sl.mp, tile / sl.mp, int(int64_t(sl.kp) * part / parts),
              int(int64_t(sl.kp) * (part + 1) / parts), sums[static_cast<size_t>(w)]);
  }
#pragma omp parallel for schedule(static)
  for (int tile = 0; tile < tiles; ++tile) {
    TileSums& total = sums[static_cast<size_t>(tile) * parts];
    for (int part = 1; part < parts; ++part)
      for (int v = 0; v < sl.dg.weights(); ++v)
        for (int e = 0; e < MR * NR; ++e) total[v][e] += sums[static_cast<size_t>(tile) * parts + part][v][e];
    round_tile(g, sl, tile % sl.mp, tile / sl.mp, total, bias);
  }
}

}  // namespace

void gemm_exact(const ops::GemmProblem& g) {
  check_k(g.k);
  const float* const bias = g.bias;
  const Isa isa = active_isa();
#if defined(SB_HAVE_ONEDNN)
  if (isa == Isa::onednn || isa == Isa::amx) return gemm_exact_onednn(g, isa == Isa::amx);
#endif
  const Kernel kern = kernel(isa);
  Sliced& sl = calling_thread_slices();
  sl.resize(g, isa);
  const int tiles = sl.mp * sl.np, parts = k_parts(sl);
#pragma omp parallel if (!omp_in_parallel())
  {
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < sl.mp; ++ip) sl.scale_a_panel(g, ip), sl.pack_a_panel(g, ip);
#pragma omp for schedule(static)
    for (int jp = 0; jp < sl.np; ++jp) sl.scale_b_panel(g, jp), sl.pack_b_panel(g, jp);
    if (parts == 1) {
#pragma omp for schedule(static)
      for (int tile = 0; tile < tiles; ++tile) exact_tile(g, sl, kern, tile % sl.mp, tile / sl.mp, bias);
    }
  }
  if (parts > 1) gemm_exact_k_parts(g, sl, kern, parts, bias);
}

void gemm_exact_split(const ops::GemmProblem& g) {
  const int k_total = g.k_total;
  const float* const bias = g.bias;
  ExactGroup& group = *g.group;
  check_k(k_total);
  SB_CHECK(!g.accumulate && g.k <= k_total, "exact k-split: a slice of k=", g.k, " of ", k_total, " (accumulate ",
           g.accumulate, ")");
  const Isa isa = active_isa();
  const Kernel kern = kernel(isa);
  Sliced& sl = calling_thread_slices();
  sl.resize(g, isa);
  const int tiles = sl.mp * sl.np;
  // The group's scales: each line's code is the max of the ranks' codes over their k-slices.
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < sl.mp; ++ip) sl.scale_a_panel(g, ip);
#pragma omp for schedule(static)
    for (int jp = 0; jp < sl.np; ++jp) sl.scale_b_panel(g, jp);
  }
  group.max(sl.row_code.data(), static_cast<size_t>(g.m));
  group.max(sl.col_code.data(), static_cast<size_t>(g.n));
  const int words = ex::narrow_dot(k_total, sl.s) ? 1 : 2;
  thread_local std::vector<uint64_t> buffer;  // the calling thread's, reused across its calls
  std::vector<uint64_t>& dots = buffer;
  dots.resize(static_cast<size_t>(g.m) * g.n * words);
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (int ip = 0; ip < sl.mp; ++ip) sl.pack_a_panel(g, ip);
#pragma omp for schedule(static)
    for (int jp = 0; jp < sl.np; ++jp) sl.pack_b_panel(g, jp);
#pragma omp for schedule(static)
    for (int tile = 0; tile < tiles; ++tile) tile_words(g, sl, kern, tile % sl.mp, tile / sl.mp, words, dots.data());
  }
  group.sum(dots.data(), dots.size());  // the integer dots of the whole k, exact in any order
#pragma omp parallel for schedule(static)
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j)
      emit(g, sl, word_dot(dots.data() + (static_cast<size_t>(i) * g.n + j) * words, words), i, j, bias);
}

}  // namespace sb::cpu::exact
