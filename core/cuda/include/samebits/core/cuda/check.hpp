// SB_CUDA_CHECK(call) and SB_CUDA_CHECK_LAUNCH(): every CUDA runtime call and kernel launch is
// checked; a failure throws sb::Error naming the call, the error and where it happened.
#pragma once
#include <cuda_runtime.h>

#include "samebits/det/error.hpp"

#define SB_CUDA_CHECK(call)                                                              \
  do {                                                                                   \
    const cudaError_t sb_cuda_status_ = (call);                                          \
    if (sb_cuda_status_ != cudaSuccess)                                                  \
      SB_FAIL("CUDA call ", #call, " failed: ", cudaGetErrorName(sb_cuda_status_), " (", \
              cudaGetErrorString(sb_cuda_status_), ") at ", __FILE__, ":", __LINE__);    \
  } while (0)

// After a kernel launch: launch-configuration errors now, execution errors at the next sync.
#define SB_CUDA_CHECK_LAUNCH() SB_CUDA_CHECK(cudaGetLastError())
