// device_info.hpp: versions from the CUDA runtime and cuBLAS (no handle needed) and the device's
// properties. A query that fails says "unknown" instead of failing the run.
#include "samebits/core/cuda/device_info.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace sb::cuda {
namespace {

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

std::string cuda_environment(int device) {
  std::string s;
  int runtime = 0, driver = 0;
  s += "CUDA runtime: " + (cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_text(runtime) : "unknown");
  int major = 0, minor = 0, patch = 0;
  const bool blas = cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
                    cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
                    cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS;
  s += "\ncuBLAS: " + (blas ? std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)
                            : std::string("unknown"));
  s += "\nCUDA driver: " + (cudaDriverGetVersion(&driver) == cudaSuccess ? cuda_version_text(driver) : "unknown");
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) == cudaSuccess) {
    s += "\nGPU: " + std::string(p.name) + " (" + std::to_string(p.multiProcessorCount) + " SMs, sm_" +
         std::to_string(p.major) + std::to_string(p.minor) + ")";
  } else {
    s += "\nGPU: unknown (device " + std::to_string(device) + ")";
  }
  return s;
}

}  // namespace sb::cuda
