// Vendor-mode random initialisation through cuRAND's device API (Philox4x32-10 states). The
// deterministic path is GPT::init (samebits' Philox and Box–Muller with samebits math, identical on
// every backend); these draw with cuRAND's own normal transform (fast intrinsics, its own
// Box–Muller branch), so their values differ from samebits' — they exist to be measured against.
#pragma once
#include <cstddef>
#include <cstdint>

#include "samebits/core/backend.hpp"
#include "samebits/core/model/gpt.hpp"

namespace sb {

// dst[i] = stddev · curand_normal(state) with state = curand_init(seed, subsequence = stream,
// offset = 2i), i.e. the uniforms 2i and 2i+1 of the stream that det::philox_normal uses.
// dst: (n) memory of `cuda` (a CUDA backend; throws sb::Error otherwise).
void curand_normal_fill(Backend& cuda, float* dst, size_t n, float stddev, uint64_t seed,
                        uint64_t stream);

// GPT::init's layout and scales (stream = det::stream_of(name), std = init_std, constants as
// given, padding zero) with curand_normal_fill's draws. The model must live on a CUDA backend.
void curand_init_gpt(GPT& model, uint64_t seed);

}  // namespace sb
