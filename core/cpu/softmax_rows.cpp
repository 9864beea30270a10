// Softmax and log softmax rows on the CPU (host_ops.hpp): OpenMP over rows, formulas from
// ops/softmax.hpp; the numerators written first, their 32-lane sum by det::lane32.

#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/core/ops/softmax.hpp"
#include "samebits/det/lane32.hpp"

namespace sb::cpu {

void softmax_rows(float* out, const float* inp, int64_t rows, int64_t cols, bool log) {
  const int n = static_cast<int>(cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = inp + r * cols;
    float* y = out + r * cols;
    const float max = ops::row_max(x, n);
    for (int i = 0; i < n; ++i) y[i] = ops::softmax_numerator(x[i], max);
    const float den = det::lane32_sum(y, static_cast<size_t>(n));  // ops::softmax_denominator's bits
    if (log) {
      for (int i = 0; i < n; ++i) y[i] = ops::log_softmax_out(x[i], max, den);
    } else {
      for (int i = 0; i < n; ++i) y[i] = ops::softmax_prob(y[i], den);
    }
  }
}

void softmax_rows_backward(float* dinp, const float* dout, const float* out, int64_t rows, int64_t cols, bool log) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dy = dout + r * cols;
    const float* y = out + r * cols;
    float* dx = dinp + r * cols;
    if (log) {
      const float s = det::lane32_sum(dy, static_cast<size_t>(cols));
      for (int64_t i = 0; i < cols; ++i) dx[i] = ops::log_softmax_dinp(y[i], dy[i], s);
    } else {
      const float s = det::lane32_dot(dy, y, static_cast<size_t>(cols));
      for (int64_t i = 0; i < cols; ++i) dx[i] = ops::softmax_dinp(y[i], dy[i], s);
    }
  }
}

}  // namespace sb::cpu
