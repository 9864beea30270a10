// GPU tests call require_gpu() first: without a CUDA device they exit 77 (CTest: skipped).
#pragma once
#include <cuda_runtime.h>

#include "support/skip.hpp"

namespace sb::test {
inline void require_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    skip("no CUDA device on this machine");
  }
}
}  // namespace sb::test
