// The CUDA side of the run file's environment record (docs/FORMAT.md, attribute environment): the
// runtime, cuBLAS and driver versions and the GPU a backend runs on.
#pragma once
#include <string>

namespace sb::cuda {

// One "name: value" line each for the CUDA runtime, cuBLAS, the driver and the device:
// "CUDA runtime: 12.4\ncuBLAS: 12.4.5\nCUDA driver: 12.4\nGPU: NVIDIA H200 (132 SMs, sm_90)".
std::string cuda_environment(int device);

}  // namespace sb::cuda
