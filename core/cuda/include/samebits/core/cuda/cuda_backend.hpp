// The CUDA backend (core/cuda/): every Backend op as kernels that call the same ops/ formulas as
// the CPU backend in the same canonical orders, so a deterministic run is bitwise equal to the
// CPU backend's for every GPU and every launch configuration (tests/parity). Vendor paths (cuBLAS,
// float atomics) sit behind the Numerics switches. docs/CUDA.md has the kernels and the switches.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "samebits/core/backend.hpp"

namespace sb {

// A tile shape of the canonical GEMM kernel: a block computes bm × bn outputs of C in k-steps of
// bk, each thread tm × tn outputs (tm, tn in {4, 8}), (bm/tm)·(bn/tn) threads per block, with
// registers for at least min_blocks blocks per SM.
struct CudaGemmTile {
  int bm, bn, bk, tm, tn, min_blocks;
};
// The tile shapes the kernel is compiled for; CudaLaunchConfig::gemm_tile indexes this list.
std::span<const CudaGemmTile> cuda_gemm_tiles();

// Block and tile sizes. None of them changes a bit of any result (each output's reduction order is
// fixed by the contract, not by the launch); they exist to be tuned and to be varied by the tests.
struct CudaLaunchConfig {
  int gemm_tile = -1;       // index into cuda_gemm_tiles(); -1: chosen per GEMM from its size
  int row_warps = 4;        // rows (one warp each) per block of the row kernels: 1..32
  int block_threads = 256;  // threads per block of elementwise and per-column kernels: 32..1024,
                            // a multiple of 32

  // "gemm=1,rows=2,threads=128" (any subset, any order; gemm=auto for -1). Throws sb::Error
  // naming the key and the accepted values on anything else.
  static CudaLaunchConfig parse(std::string_view text);
  // Throws sb::Error when a field is out of range.
  void validate() const;
  std::string describe() const;  // "gemm=auto rows=4 threads=256"
};

struct CudaOptions {
  CudaLaunchConfig launch;
  // gemm=vendor with fp32 operands: cuBLAS SGEMM with TF32 tensor cores
  // (CUBLAS_TF32_TENSOR_OP_MATH) instead of CUBLAS_DEFAULT_MATH (plain fp32 SIMT). bf16 and fp16
  // operands under gemm=vendor always go to cublasGemmEx on 16-bit inputs (tensor cores).
  bool vendor_tf32 = false;

  // From the environment: SAMEBITS_CUDA_LAUNCH (CudaLaunchConfig::parse syntax) and
  // SAMEBITS_CUDA_TF32 (0 or 1); defaults for what is unset.
  static CudaOptions from_environment();
};

// CUDA devices visible to this process; 0 when there is no device or no driver.
int cuda_device_count();

// A CUDA backend on device `device`: its own stream, cuBLAS handle (created on first vendor GEMM)
// and device memory (cudaMalloc: 256-byte aligned). Options from CudaOptions::from_environment().
// Throws sb::Error when the device does not exist.
std::unique_ptr<Backend> make_cuda_backend(Numerics numerics = Numerics::deterministic(), int device = 0);
std::unique_ptr<Backend> make_cuda_backend(Numerics numerics, const CudaOptions& options, int device = 0);

// The stream every op of a CUDA backend is ordered on (for timing with events, and for NCCL).
// Throws sb::Error when `backend` is not a CUDA backend.
cudaStream_t cuda_stream(Backend& backend);
// The device index of a CUDA backend (throws likewise).
int cuda_device(Backend& backend);

}  // namespace sb
