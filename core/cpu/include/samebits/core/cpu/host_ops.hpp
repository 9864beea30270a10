// Host loops over fp32 memory beyond the Backend's ops, for the ATen ops samebits.torch.deterministic
// runs on samebits' kernels (docs/TORCH.md): the same formulas (ops/) and orders as the Backend's,
// with the parameters a PyTorch program sets (a LayerNorm's eps, any row length, any reduced
// dimension). OpenMP over independent outputs: the same bits for any thread count.
#pragma once
#include <cstdint>

#include "samebits/core/numerics.hpp"
#include "samebits/core/ops/pointwise.hpp"

namespace sb::cpu {

// LayerNorm rows as Backend::layernorm_forward (which is this with ops::kNormEps), eps given.
void layernorm_rows(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N,
                    int C, ReduceMode mode, float eps);

// Softmax (log: log softmax) of each row of `cols` values: the exact row max, the 32-lane
// denominator (ops/softmax.hpp), then per element.  out, inp: (rows, cols).
void softmax_rows(float* out, const float* inp, int64_t rows, int64_t cols, bool log);
// Its input gradient from the output: dinp = y·(dy − Σ dy·y) (32-lane dot), or for log softmax
// dy − exp(y)·Σ dy (32-lane sum).  dinp, dout, out: (rows, cols).
void softmax_rows_backward(float* dinp, const float* dout, const float* out, int64_t rows, int64_t cols, bool log);

// A reduction (ops/pointwise.hpp) of the middle dimension of (outer, K, inner) into (outer, inner).
// With inner == 1 a row: the 32-lane form for the sums (rule 2); otherwise each output is the
// chain over k ascending from the start value (rule 3). K == 0: 0 for the sums, −inf (max) or 0
// (absmax).
using ops::Reduction;
void reduce_middle(Reduction r, float* out, const float* inp, int64_t outer, int64_t K, int64_t inner);

// Elementwise functions on samebits' own math (ops/pointwise.hpp): out[i] = f(inp[i]).
using ops::Pointwise;
void pointwise(Pointwise f, float* out, const float* inp, int64_t n);
// Their input gradients (ops::pointwise_grad): dinp[i] = f'·dout[i], from the output (tanh,
// sigmoid: at = y) or the input (silu, gelu_tanh, gelu_erf: at = x). Other functions are refused
// (sb::Error).
void pointwise_backward(Pointwise f, float* dinp, const float* dout, const float* at, int64_t n);

}  // namespace sb::cpu
