// The CPU backend's class (internal to core/cpu): each op's methods are defined in the op's own
// file (matmul.cpp, layernorm.cpp, ...). OpenMP only over independent outputs, so every result is
// the same for any thread count; the SIMD paths compute the same per-output chains as the scalar.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "samebits/core/backend.hpp"

namespace sb::cpu {

// Parts of the canonical GEMM (matmul.cpp) for products whose operands hold known zeros. Every
// element computed is rule 1's chain, bitwise:
//   full        every tile, every chain over p = 0..k-1.
//   syrk        Backend::syrk: the upper triangle's tiles, mirrored.
//   lower       only the tiles that reach the lower triangle j ≤ i: C[i][j] for j > i is left
//               unspecified (attention scores, which the causal mask overwrites).
//   k_to_row    row i's chain stops after p = min(k − 1, i), exactly rule 1's chain over
//               p ≤ i (the tiles run to the panel's first row, then each row finishes alone: a
//               masked term fma(+0, x, acc) would turn a −0 from an underflowed product into
//               +0) — attention's P·V and dS·K, whose op(A)[i][p] beyond i is never read.
//   k_from_row  row i's chain starts at the first row of i's panel (≤ i) instead of 0: op(A)[i][p]
//               = ±0 for p < i and a finite op(B), so the chain is +0 until p = i either way —
//               attention's dSᵀ·Q and Pᵀ·dY.
enum class GemmPart : uint8_t { full, syrk, lower, k_to_row, k_from_row };

// The GEMM of one numerics.gemm mode and bf16 dot order (matmul.cpp), chosen once when the backend is made: each
// entry takes a product that check_gemm accepts, m, n >= 1.
struct GemmEngine {
  void (*product)(const ops::GemmProblem& g);  // C ← [C +] op(A)·op(B) (+ bias); no k-split
  void (*syrk)(const ops::GemmProblem& g);     // ops::is_syrk(g), k >= 1
  // On the calling thread only (CpuBackend::serial_gemm), k >= 1: canonical and vendor, the
  // canonical chains of a causal part with plain loops; exact, the exact GEMM of the full product.
  void (*serial)(GemmPart part, const ops::GemmProblem& g);
  void (*split)(const ops::GemmProblem& g);  // k split across g.group: exact only, else refused
};
const GemmEngine& gemm_engine_of(const Numerics& n);

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(Numerics numerics) : Backend(numerics), gemm_(gemm_engine_of(numerics)) {}

  Device device() const override { return Device::cpu; }
  std::string describe() const override;

  Tensor alloc(DType dtype, Shape shape) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  std::unique_ptr<GradAccumulator> make_accumulator(size_t n) override;
  OptimKernels& optim_kernels() override;  // host_optim_kernels()
  std::unique_ptr<TensorSums> make_tensor_sums(std::vector<TensorSpan> spans) override;
  void fingerprints(const float* flat, const std::vector<TensorSpan>& spans,
                    uint64_t* out) override;  // tensor_sums.cpp

  void gemm(const ops::GemmProblem& g) override;  // matmul.cpp
  void syrk(const ops::GemmProblem& g) override;
  // A fresh fp32 product (k >= 1) on the calling thread only, for ops that give each thread whole
  // independent problems (attention's (sequence, head) pairs): no OpenMP team of its own, no fork
  // or worksharing cost per call. `part` as GemmEngine::serial: the operands a causal part skips
  // are ±0, which add nothing to an exact sum, and a lower part's elements above the diagonal are
  // unspecified.
  void serial_gemm(GemmPart part, const ops::GemmProblem& g) const;
  // The ops of backend_op_list.hpp, one file each: matmul.cpp, layernorm.cpp, …
#include "samebits/core/backend_op_overrides.hpp"

 private:
  const GemmEngine& gemm_;
};

// ---- helpers shared by the op files ----------------------------------------------------------

// Row sums in the numerics' reduce mode: canonical = the 32-lane form (det::lane32_*, SIMD when
// built with it); native = 16 float partials, the form a vectorising compiler gives a float sum.
float row_sum(const float* x, int n, ReduceMode mode);                  // Σ x
float row_dot(const float* x, const float* y, int n, ReduceMode mode);  // Σ x·y (fma per element)

// Reductions over the N tokens of a leaf, per column c < C: out[c] = fold of step(acc, n, c) over
// n. Canonical (rule 3): one chain per column from +0, n ascending, OpenMP over column blocks.
// Native: OpenMP over tokens, per-thread partials added into out in thread arrival order (the
// result depends on the thread count and on timing).
// The canonical form as a worksharing loop of the enclosing parallel region, without a barrier at
// its end: for ops that run it beside their other loops in one fork/join.
template <class Step>
void token_reduce_canonical_nowait(float* out /* (C) */, int N, int C, Step step) {
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp for schedule(static) nowait
  for (int blk = 0; blk < blocks; ++blk) {
    const int c0 = blk * kBlock, c1 = c0 + kBlock < C ? c0 + kBlock : C;
    float acc[kBlock];
    for (int c = c0; c < c1; ++c) acc[c - c0] = 0.0f;
    for (int n = 0; n < N; ++n) {
#pragma omp simd
      for (int c = c0; c < c1; ++c) acc[c - c0] = step(acc[c - c0], n, c);
    }
    for (int c = c0; c < c1; ++c) out[c] = acc[c - c0];
  }
}

template <class Step>
void token_reduce(float* out /* (C) */, int N, int C, ReduceMode mode, Step step) {
  if (mode == ReduceMode::canonical) {
#pragma omp parallel
    token_reduce_canonical_nowait(out, N, C, step);
    return;
  }
  for (int c = 0; c < C; ++c) out[c] = 0.0f;
#pragma omp parallel
  {
    std::unique_ptr<float[]> part(new float[C]());
    float* const acc = part.get();
#pragma omp for schedule(static) nowait
    for (int n = 0; n < N; ++n) {
#pragma omp simd
      for (int c = 0; c < C; ++c) acc[c] = step(acc[c], n, c);
    }
#pragma omp critical(sb_token_reduce)
    for (int c = 0; c < C; ++c) out[c] += acc[c];
  }
}

}  // namespace sb::cpu
