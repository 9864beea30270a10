// PLACEHOLDER while the math helper writes samebits' own functions; replaced wholesale.
#pragma once
#include "samebits/det/hd.hpp"
namespace sb::det {
SB_HD float exp(float x) { return __builtin_expf(x); }
SB_HD float log(float x) { return __builtin_logf(x); }
SB_HD float tanh(float x) { return __builtin_tanhf(x); }
SB_HD float erf(float x) { return __builtin_erff(x); }
SB_HD float sin(float x) { return __builtin_sinf(x); }
SB_HD float cos(float x) { return __builtin_cosf(x); }
SB_HD float cos_2pi(float u) { return __builtin_cosf(6.2831853f * u); }
}  // namespace sb::det
