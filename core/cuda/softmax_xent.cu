// Fused softmax + cross-entropy on the GPU: one warp per row — the exact max (rule 6) and the
// 32-lane denominator (lane l: logits l, l+32, ... ascending; det::lane32_fold's tree by
// shuffles, rule 2) — then one thread per logit for the gradient. Formulas from
// ops/softmax_xent.hpp: bitwise core/cpu/softmax_xent.cpp for any launch configuration.
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

void CudaBackend::softmax_xent_backward(float* dlogits, const float* logits, const float* stats, const int32_t* targets,
                                        int N, int V, float loss_scale) {
  activate();
  for_each(*this, static_cast<int64_t>(N) * V,
           XentBackward{dlogits, logits, stats, targets, V, static_cast<float>(N), loss_scale});
}

}  // namespace sb::cuda
