// <immintrin.h> for the SIMD GEMM files (on x86-64), without GCC 12's false -Wuninitialized from the AVX-512
// shuffle intrinsics (GCC bug 105593, fixed in GCC 13). No arithmetic here.
#pragma once
#if defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
