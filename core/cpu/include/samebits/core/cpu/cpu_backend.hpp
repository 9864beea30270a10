// The CPU backend, the reference (docs/CORE.md): OpenMP over independent outputs, so every result
// is the same for any thread count; its SIMD paths compute the scalar path's chains. The class is
// internal to core/cpu (cpu_backend_class.hpp); this is what the layers above see.
#pragma once
#include <memory>

#include "samebits/core/backend.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb {

// The reference backend: OpenMP over independent outputs, results independent of thread count.
std::unique_ptr<Backend> make_cpu_backend(Numerics numerics = Numerics::deterministic());

// The optimizers' host loops, for host memory: what the CPU backend's optim_kernels() gives
// (core/cpu/optim_kernels.cpp). They are stateless, so one object serves all.
OptimKernels& host_optim_kernels();

}  // namespace sb
