// Token + position embeddings on the GPU. Forward: one thread per output element. Backward
// (canonical, rule 3): the tokens are grouped by vocabulary row on the host (a counting sort, as
// core/cpu/embedding.cpp does), then one thread per (present row, channel) adds the row's tokens'
// gradients in token order, and one thread per (position, channel) chains dwpe over sequences b
// ascending from +0 — no races, bitwise the CPU backend. Native (reduce=native): float atomicAdd
// per (token, channel), in arrival order. Only the tokens of the table's VocabRows touch it.
// Formulas: ops/embedding.hpp.
#include <vector>

#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/embedding.hpp"
#include "samebits/det/error.hpp"

namespace sb::cuda {
namespace {

struct EmbeddingForward {
  float* out;             // (B, T, C)
  const int32_t* tokens;  // (B, T)
  const float* wte;       // (rows.count(), C)
  const float* wpe;       // (T_max, C), or null (rotary positions): the token row alone
  int T, C;
  VocabRows rows;
  __device__ void operator()(int64_t i) const {
    const int64_t n = i / C;
    const int c = static_cast<int>(i % C);
    const int32_t v = tokens[n];
    if (v < rows.begin || v >= rows.end) return;
    const float te = wte[static_cast<int64_t>(v - rows.begin) * C + c];
    out[i] = wpe != nullptr ? ops::embedding_out(te, wpe[(n % T) * C + c]) : te;
  }
};

// Row rows[r] of dwte, channels c: dwte[v][c] ← dwte[v][c] + dout[n][c] for the row's tokens n in
// ascending order (order[start[r] .. start[r+1]-1]).
__global__ void embedding_rows_kernel(float* dwte, const float* dout, const int32_t* order, const int32_t* rows,
                                      const int32_t* start, int C) {
  const int r = static_cast<int>(blockIdx.x);
  float* te = dwte + static_cast<int64_t>(rows[r]) * C;  // (C)
  const int s0 = start[r], s1 = start[r + 1];
  const int stride = static_cast<int>(gridDim.y * blockDim.x);
  for (int c = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x); c < C; c += stride) {
    float acc = te[c];
    for (int s = s0; s < s1; ++s) acc = ops::embedding_grad_step(acc, dout[static_cast<int64_t>(order[s]) * C + c]);
    te[c] = acc;
  }
}

// dwpe[t][c] = Σ_b dout[b][t][c], b ascending from +0.
struct PositionGrad {
  float* dwpe;        // (T_max, C): rows 0..T-1 written
  const float* dout;  // (B, T, C)
  int B, T, C;
  __device__ void operator()(int64_t i) const {
    const int64_t t = i / C, c = i % C;
    float acc = 0.0f;
    for (int b = 0; b < B; ++b) acc = ops::embedding_grad_step(acc, dout[(b * T + t) * C + c]);
    dwpe[i] = acc;
  }
};

struct NativeEmbeddingGrad {
  float* dwte;            // (rows.count(), C)
  float* dwpe;            // (T_max, C), rows 0..T-1 zeroed
  const float* dout;      // (B, T, C)
  const int32_t* tokens;  // (B, T)
  int T, C;
  VocabRows rows;
  __device__ void operator()(int64_t i) const {
    const int64_t n = i / C, c = i % C;
    const int32_t v = tokens[n];
    if (v >= rows.begin && v < rows.end) atomicAdd(dwte + static_cast<int64_t>(v - rows.begin) * C + c, dout[i]);
    if (dwpe != nullptr) atomicAdd(dwpe + (n % T) * C + c, dout[i]);
  }
};

}  // namespace

void CudaBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                                    int C, VocabRows rows) {
  activate();
  for_each(*this, static_cast<int64_t>(B) * T * C, EmbeddingForward{out, tokens, wte, wpe, T, C, rows});
}

void CudaBackend::embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B, int T,
                                     int C, int V, VocabRows rows) {
  activate();
  const int N = B * T;
  std::vector<int32_t> tok(static_cast<size_t>(N));  // (N) host copy: range check and grouping
  download(tok.data(), tokens, tok.size() * sizeof(int32_t));
  for (int n = 0; n < N; ++n)
    SB_CHECK(tok[n] >= 0 && tok[n] < V, "token ", tok[n], " at position ", n, " is outside the vocabulary [0, ", V,
             ")");
  SB_CHECK(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= V, "embedding table rows [", rows.begin, ", ",
           rows.end, ") outside the vocabulary [0, ", V, ")");
  const int64_t NC = static_cast<int64_t>(N) * C;
  if (numerics().reduce == ReduceMode::native) {
    if (dwpe != nullptr) SB_CUDA_CHECK(cudaMemsetAsync(dwpe, 0, static_cast<size_t>(T) * C * sizeof(float), stream()));
    for_each(*this, NC, NativeEmbeddingGrad{dwte, dwpe, dout, tokens, T, C, rows});
    return;
  }
  // Counting sort by vocabulary row: order[] lists the tokens of each present row, ascending.
  std::vector<int32_t> count(static_cast<size_t>(V) + 1, 0);
  for (int n = 0; n < N; ++n) ++count[tok[n] + 1];
  for (int v = 0; v < V; ++v) count[v + 1] += count[v];
  std::vector<int32_t> index(static_cast<size_t>(N) + 2 * (static_cast<size_t>(V) + 1));
  int32_t* order = index.data();  // (N)
  {
    std::vector<int32_t> fill(count.begin(), count.end() - 1);
    for (int n = 0; n < N; ++n) order[fill[tok[n]]++] = n;
  }
  int32_t* present = order + N;  // (R) present rows of the table, then start (R + 1)
  int R = 0;
  for (int v = rows.begin; v < rows.end; ++v)
    if (count[v + 1] > count[v]) present[R++] = v - rows.begin;
  int32_t* start = present + R;
  for (int r = 0; r < R; ++r) start[r] = count[present[r] + rows.begin];
  start[R] = R > 0 ? count[present[R - 1] + rows.begin + 1] : 0;
  const size_t used = static_cast<size_t>(N) + 2 * static_cast<size_t>(R) + 1;
  auto* dev = static_cast<int32_t*>(scratch(Scratch::embedding, used * sizeof(int32_t)));
  upload(dev, index.data(), used * sizeof(int32_t));
  if (R > 0 && C > 0) {
    const int threads = launch().block_threads;
    const dim3 grid(static_cast<unsigned>(R), std::min(grid_for(C, threads), 65535u));
    embedding_rows_kernel<<<grid, threads, 0, stream()>>>(dwte, dout, dev, dev + N, dev + N + R, C);
    SB_CUDA_CHECK_LAUNCH();
  }
  if (dwpe != nullptr) for_each(*this, static_cast<int64_t>(T) * C, PositionGrad{dwpe, dout, B, T, C});
}

}  // namespace sb::cuda
