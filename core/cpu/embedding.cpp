// Token + position embeddings on the CPU. Forward: OpenMP over tokens. Backward: dwte rows in
// parallel, each row adding its tokens' gradients in token order (no races, rule 3); dwpe rows in
// parallel, each the chain over sequences b ascending. reduce=native keeps this order: PyTorch's
// CPU embedding backward is the same scheme (each vocabulary row's tokens added in order by one
// thread), and float atomics would cost a locked instruction per element. Only the tokens of the
// table's VocabRows touch it (the vocabulary-parallel layout): a row's chain is the same on
// whichever rank holds it. Formulas: ops/embedding.hpp.
#include <vector>

#include "cpu_backend_class.hpp"
#include "samebits/core/ops/embedding.hpp"
#include "samebits/det/error.hpp"

namespace sb::cpu {

void CpuBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                                   int C, VocabRows rows) {
#pragma omp parallel for schedule(static)
  for (int n = 0; n < B * T; ++n) {
    if (!rows.holds(tokens[n])) continue;
    const float* te = wte + static_cast<size_t>(tokens[n] - rows.begin) * C;
    float* o = out + static_cast<size_t>(n) * C;
    if (wpe == nullptr) {  // rotary positions: the token row alone
      for (int c = 0; c < C; ++c) o[c] = te[c];
      continue;
    }
    const float* pe = wpe + static_cast<size_t>(n % T) * C;
    for (int c = 0; c < C; ++c) o[c] = ops::embedding_out(te[c], pe[c]);
  }
}

void CpuBackend::embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                                    int C, int V, VocabRows rows) {
  const int N = B * T;
  for (int n = 0; n < N; ++n)
    SB_CHECK(tokens[n] >= 0 && tokens[n] < V, "token ", tokens[n], " at position ", n,
             " is outside the vocabulary [0, ", V, ")");
  SB_CHECK(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= V, "embedding table rows [", rows.begin, ", ",
           rows.end, ") outside the vocabulary [0, ", V, ")");
  // Tokens grouped by vocabulary row, each group in ascending token order (a counting sort).
  std::vector<int> start(static_cast<size_t>(V) + 1, 0), order(N);
  for (int n = 0; n < N; ++n) ++start[tokens[n] + 1];
  for (int v = 0; v < V; ++v) start[v + 1] += start[v];
  {
    std::vector<int> fill(start.begin(), start.end() - 1);
    for (int n = 0; n < N; ++n) order[fill[tokens[n]]++] = n;
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (int v = rows.begin; v < rows.end; ++v) {
    float* te = dwte + static_cast<size_t>(v - rows.begin) * C;
    for (int s = start[v]; s < start[v + 1]; ++s) {
      const float* g = dout + static_cast<size_t>(order[s]) * C;
      for (int c = 0; c < C; ++c) te[c] = ops::embedding_grad_step(te[c], g[c]);
    }
  }
  if (dwpe == nullptr) return;  // rotary positions: no table
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; ++t) {
    float* pe = dwpe + static_cast<size_t>(t) * C;
    for (int c = 0; c < C; ++c) pe[c] = 0.0f;
    for (int b = 0; b < B; ++b) {
      const float* g = dout + (static_cast<size_t>(b) * T + t) * C;
      for (int c = 0; c < C; ++c) pe[c] = ops::embedding_grad_step(pe[c], g[c]);
    }
  }
}

}  // namespace sb::cpu
