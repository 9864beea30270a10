// Fused softmax + cross-entropy on the GPU: one warp per row — the exact max (rule 6) and the
// 32-lane denominator (lane l: logits l, l+32, ... ascending; det::lane32_fold's tree by
// shuffles, rule 2) — then one thread per logit for the gradient. Formulas from
// ops/softmax_xent.hpp: bitwise core/cpu/softmax_xent.cpp for any launch configuration. The
// vocabulary-parallel pieces: one warp per row, lane l continuing the row's lane l over the
// columns ≡ l (mod 32) by global index; the record's fold and loss one thread per row.
#include <vector>

#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb::cuda {
namespace {

__global__ void softmax_xent_forward_kernel(float* losses, float* stats, const float* logits, const int32_t* targets,
                                            int N, int V) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;                         // the whole warp leaves together
  const float* l = logits + n * V;            // (V)
  float m = det::float_of_bits(0xff800000u);  // -inf, as ops::row_max starts
  for (int v = lane; v < V; v += 32) m = ops::exact_max(m, l[v]);
  m = warp_exact_max(m);
  float s = 0.0f;
  for (int v = lane; v < V; v += 32) s = s + ops::softmax_numerator(l[v], m);
  const float den = warp_lane32_fold(s);
  if (lane == 0) {
    stats[2 * n] = m;
    stats[2 * n + 1] = den;
    losses[n] = ops::xent_loss(l[targets[n]], m, den);
  }
}

__global__ void xent_shard_max_kernel(float* max, const float* logits, int N, int V, bool accumulate) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;  // the whole warp leaves together
  const float* l = logits + n * V;
  float m = det::float_of_bits(0xff800000u);
  for (int v = lane; v < V; v += 32) m = ops::exact_max(m, l[v]);
  m = warp_exact_max(m);
  if (lane == 0) max[n] = accumulate ? ops::exact_max(max[n], m) : m;
}

__global__ void xent_shard_sum_kernel(float* part, const float* logits, const float* max, const int32_t* targets, int N,
                                      int V, int first, bool accumulate) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const float* l = logits + n * V;
  float* p = part + n * ops::kXentPart;
  p[lane] = ops::xent_shard_lane(accumulate ? p[lane] : 0.0f, l, V, first, max[n], lane);
  if (lane == 0) {
    if (!accumulate) p[det::kLanes] = 0.0f;
    ops::xent_shard_target(p, l, V, targets[n]);
  }
}

struct XentShardLoss {
  float* losses;      // (N)
  float* stats;       // (N, 2)
  const float* part;  // (N, kXentPart)
  const float* max;   // (N)
  __device__ void operator()(int64_t n) const {
    losses[n] = ops::xent_shard_loss_row(stats + 2 * n, part + n * ops::kXentPart, max[n]);
  }
};

struct XentBackward {
  float* dlogits;          // (N, V)
  const float* logits;     // (N, V)
  const float* stats;      // (N, 2)
  const int32_t* targets;  // (N)
  int V;
  float rows, loss_scale;
  __device__ void operator()(int64_t i) const {
    const int64_t n = i / V;
    const int v = static_cast<int>(i % V);
    dlogits[i] = ops::xent_dlogit(logits[i], stats[2 * n], stats[2 * n + 1], v == targets[n], rows, loss_scale);
  }
};

}  // namespace

void CudaBackend::softmax_xent_forward(float* losses, float* stats, const float* logits, const int32_t* targets, int N,
                                       int V) {
  if (N <= 0) return;
  activate();
  std::vector<int32_t> host(static_cast<size_t>(N));  // (N): checked here, as the CPU does
  download(host.data(), targets, host.size() * sizeof(int32_t));
  for (int n = 0; n < N; ++n)
    SB_CHECK(host[n] >= 0 && host[n] < V, "target token ", host[n], " at position ", n,
             " is outside the vocabulary [0, ", V, ")");
  const int warps = launch().row_warps;
  softmax_xent_forward_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(losses, stats, logits, targets, N,
                                                                                    V);
  SB_CUDA_CHECK_LAUNCH();
}

void CudaBackend::xent_shard_max(float* max, const float* logits, int N, int V, bool accumulate) {
  if (N <= 0) return;
  activate();
  const int warps = launch().row_warps;
  xent_shard_max_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(max, logits, N, V, accumulate);
  SB_CUDA_CHECK_LAUNCH();
}

void CudaBackend::xent_shard_sum(float* part, const float* logits, const float* max, const int32_t* targets, int N,
                                 int V, int first, bool accumulate) {
  if (N <= 0) return;
  activate();
  const int warps = launch().row_warps;
  xent_shard_sum_kernel<<<grid_for_rows(N, warps), warps * 32, 0, stream()>>>(part, logits, max, targets, N, V, first,
                                                                              accumulate);
  SB_CUDA_CHECK_LAUNCH();
}

void CudaBackend::xent_shard_loss(float* losses, float* stats, const float* part, const float* max, int N) {
  activate();
  for_each(*this, N, XentShardLoss{losses, stats, part, max});
}

void CudaBackend::softmax_xent_backward(float* dlogits, const float* logits, const float* stats, const int32_t* targets,
                                        int N, int V, float loss_scale) {
  activate();
  for_each(*this, static_cast<int64_t>(N) * V,
           XentBackward{dlogits, logits, stats, targets, V, static_cast<float>(N), loss_scale});
}

}  // namespace sb::cuda
