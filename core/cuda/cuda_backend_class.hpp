// The CUDA backend's class (internal to core/cuda): each op's methods are defined in the op's own
// file (matmul.cu, layernorm.cu, ...), named as in core/cpu/. Every kernel runs on the backend's
// stream; every CUDA call and launch is checked. Launch sizes never change a bit (docs/CUDA.md).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/optim_kernels.hpp"

// SB_CUBLAS_CHECK(call): a cuBLAS status other than success throws sb::Error naming the call.
#define SB_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                          \
    const cublasStatus_t sb_cublas_status_ = (call);                                            \
    if (sb_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      SB_FAIL("cuBLAS call ", #call, " failed: ", cublasGetStatusName(sb_cublas_status_), " (", \
              cublasGetStatusString(sb_cublas_status_), ") at ", __FILE__, ":", __LINE__);      \
  } while (0)

namespace sb::cuda {

// Persistent device scratch buffers of the backend, one per purpose.
enum class Scratch : uint8_t { gemm_a, gemm_b, exact_lines, embedding, fingerprint, count };

class CudaBackend final : public Backend {
 public:
  CudaBackend(Numerics numerics, const CudaOptions& options, int device);
  ~CudaBackend() override;

  Device device() const override { return Device::cuda; }
  std::string describe() const override;

  Tensor alloc(DType dtype, Shape shape) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void zero(void* dst, size_t bytes) override;
  void synchronize() override;
  std::unique_ptr<GradAccumulator> make_accumulator(size_t n) override;
  OptimKernels& optim_kernels() override;  // optim_kernels.cu, made on first use
  std::unique_ptr<TensorSums> make_tensor_sums(std::vector<TensorSpan> spans) override;
  void fingerprints(const float* flat, const std::vector<TensorSpan>& spans,
                    uint64_t* out) override;  // tensor_sums.cu

  void gemm(const ops::GemmProblem& g) override;  // matmul.cu
  // The ops of backend_op_list.hpp, one file each: matmul.cu, layernorm.cu, …
#include "samebits/core/backend_op_overrides.hpp"

  // ---- for the op files ------------------------------------------------------------------------
  cudaStream_t stream() const { return stream_; }
  int device_index() const { return device_; }
  int sm_count() const { return sm_count_; }
  const CudaOptions& options() const { return options_; }
  const CudaLaunchConfig& launch() const { return options_.launch; }
  // Makes this backend's device the calling thread's current device (every public entry does).
  void activate() const;
  // `backend` as a CUDA backend (an sb::Error naming it when it is another kind).
  static CudaBackend& of(Backend& backend);
  // Host → device and device → host copies ordered on the stream; both return when done and
  // count into host_traffic(). Either side may also be host memory (cudaMemcpyDefault, UVA).
  void upload(void* dst, const void* host_src, size_t bytes);
  void download(void* host_dst, const void* src, size_t bytes);
  // A device buffer of at least `bytes` for `slot`, kept between calls (grown when needed).
  void* scratch(Scratch slot, size_t bytes);
  // The cuBLAS handle on the stream (created on first use; math mode per options().vendor_tf32).
  cublasHandle_t cublas();

 private:
  // The GEMM engines of the numerics.gemm modes (one product, no bias, no k-split; m, n >= 1),
  // one of them chosen at construction (gemm_engine_of).
  using GemmEngine = void (CudaBackend::*)(const ops::GemmProblem& g);
  static GemmEngine gemm_engine_of(const Numerics& n);
  void gemm_canonical(const ops::GemmProblem& g);
  void gemm_vendor(const ops::GemmProblem& g);
  // numerics.gemm = exact (exact_gemm.cu): bitwise the CPU's exact GEMM.
  void gemm_exact(const ops::GemmProblem& g);
  // numerics.bf16_dot = pairs (bf16_pairs.cu): bf16 products in the pair order, bitwise the CPU's.
  void gemm_pairs(const ops::GemmProblem& g);

  GemmEngine gemm_ = nullptr;

  CudaOptions options_;
  int device_ = 0;
  int sm_count_ = 0;
  int cc_major_ = 0, cc_minor_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<OptimKernels> optim_kernels_;
  Tensor xxh3_secret_;      // (192 bytes) XXH3's default secret, for fingerprints
  Tensor fingerprint_out_;  // (tensors) u64 fingerprints computed on the device
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  std::array<Buffer, static_cast<size_t>(Scratch::count)> scratch_{};
};

// The optimizers' kernels on `backend`'s memory (optim_kernels.cu): what optim_kernels() owns.
std::unique_ptr<OptimKernels> make_optim_kernels(CudaBackend& backend);

// ---- launch helpers ----------------------------------------------------------------------------

// Blocks for a grid-stride loop over n items with `threads` per block (at least 1, at most 2^20:
// the loop covers the rest).
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t{1} << 20));
}

// Blocks of `warps` rows each for `rows` rows (at least 1).
inline unsigned grid_for_rows(int64_t rows, int warps) {
  SB_CHECK(rows <= (int64_t{1} << 31) - 1, "a row kernel over ", rows, " rows exceeds the grid limit of 2^31 - 1 rows");
  return static_cast<unsigned>(std::max<int64_t>(1, (rows + warps - 1) / warps));
}

}  // namespace sb::cuda
