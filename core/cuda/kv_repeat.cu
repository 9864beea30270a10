// Grouped-query attention's key/value heads on the GPU: one thread per output element; the index
// map and the backward's chain are ops/kv_repeat.hpp, bitwise core/cpu/kv_repeat.cpp.
#include "cuda_backend_class.hpp"
#include "elementwise.cuh"
#include "samebits/core/ops/kv_repeat.hpp"

namespace sb::cuda {
namespace {

struct KvRepeatForward {
  float* out;        // (N, 3·NH·hd)
  const float* qkv;  // (N, (NH + 2G)·hd)
  int NH, G, hd;
  __device__ void operator()(int64_t e) const {
    const int64_t M = 3 * int64_t{NH} * hd, W = int64_t{NH + 2 * G} * hd, n = e / M;
    out[e] = qkv[n * W + ops::kv_repeat_source(e % M, NH, G, hd)];
  }
};

struct KvRepeatBackward {
  float* dqkv;        // (N, (NH + 2G)·hd)
  const float* dout;  // (N, 3·NH·hd)
  int NH, G, hd;
  __device__ void operator()(int64_t e) const {
    const int64_t M = 3 * int64_t{NH} * hd, W = int64_t{NH + 2 * G} * hd, n = e / W;
    dqkv[e] = ops::kv_repeat_gradient(dout + n * M, e % W, NH, G, hd);
  }
};

}  // namespace

void CudaBackend::kv_repeat_forward(float* out, const float* qkv, int N, int NH, int G, int hd) {
  activate();
  for_each(*this, int64_t{N} * 3 * NH * hd, KvRepeatForward{out, qkv, NH, G, hd});
}

void CudaBackend::kv_repeat_backward(float* dqkv, const float* dout, int N, int NH, int G, int hd) {
  activate();
  for_each(*this, int64_t{N} * (NH + 2 * G) * hd, KvRepeatBackward{dqkv, dout, NH, G, hd});
}

}  // namespace sb::cuda
