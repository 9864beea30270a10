# The only place floating-point flags are set (docs/CONTRACT.md rule 8).
# Host: no fast-math, no FMA contraction. CUDA: no fmad, IEEE division and sqrt, no flush-to-zero.
# Configuring with a flag that breaks the contract in any flags variable is an error.

set(SAMEBITS_FORBIDDEN_FP_FLAGS "-ffast-math" "-Ofast" "--use_fast_math" "-use_fast_math"
    "-ffp-contract=fast" "-funsafe-math-optimizations" "-fassociative-math" "-ffinite-math-only"
    "-freciprocal-math" "--fmad=true" "-fmad=true" "--ftz=true" "-ftz=true")
set(_sb_flag_vars CMAKE_C_FLAGS CMAKE_CXX_FLAGS CMAKE_CUDA_FLAGS)
foreach(_cfg DEBUG RELEASE RELWITHDEBINFO MINSIZEREL)
  list(APPEND _sb_flag_vars CMAKE_C_FLAGS_${_cfg} CMAKE_CXX_FLAGS_${_cfg} CMAKE_CUDA_FLAGS_${_cfg})
endforeach()
list(APPEND _sb_flag_vars CMAKE_EXE_LINKER_FLAGS)
foreach(_var IN LISTS _sb_flag_vars)
  if(DEFINED ${_var})
    separate_arguments(_sb_words UNIX_COMMAND "${${_var}}")
    foreach(_word IN LISTS _sb_words)
      if(_word IN_LIST SAMEBITS_FORBIDDEN_FP_FLAGS)
        message(FATAL_ERROR
          "samebits: ${_var} contains '${_word}', which breaks the numerical contract "
          "(docs/CONTRACT.md rule 8: no fast-math, no FMA contraction, no flush-to-zero). "
          "Remove it; floating-point flags are set only in cmake/Numerics.cmake.")
      endif()
    endforeach()
  endif()
endforeach()

# SIMD level of the host build. AUTO uses what the build machine has (AVX2+FMA+F16C, AVX-512F);
# SCALAR builds the plain loops only. Every level gives the same bits (tested).
set(SAMEBITS_SIMD AUTO CACHE STRING "Host SIMD level: AUTO, AVX512, AVX2 or SCALAR")
set_property(CACHE SAMEBITS_SIMD PROPERTY STRINGS AUTO AVX512 AVX2 SCALAR)
set(_sb_simd ${SAMEBITS_SIMD})
if(_sb_simd STREQUAL "AUTO")
  set(_sb_simd SCALAR)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND EXISTS /proc/cpuinfo)
    file(READ /proc/cpuinfo _sb_cpuinfo)
    if(_sb_cpuinfo MATCHES " avx2 " AND _sb_cpuinfo MATCHES " fma " AND _sb_cpuinfo MATCHES " f16c ")
      set(_sb_simd AVX2)
      if(_sb_cpuinfo MATCHES " avx512f ")
        set(_sb_simd AVX512)
      endif()
    endif()
  endif()
endif()
set(SAMEBITS_SIMD_LEVEL ${_sb_simd} CACHE INTERNAL "resolved SIMD level")
message(STATUS "samebits: host SIMD level ${SAMEBITS_SIMD_LEVEL}")

add_library(sb_numerics INTERFACE)
target_compile_options(sb_numerics INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off -fno-fast-math -fno-math-errno>
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false --prec-div=true --prec-sqrt=true --ftz=false
                             -Xcompiler=-ffp-contract=off>)
if(SAMEBITS_SIMD_LEVEL STREQUAL "AVX512")
  target_compile_options(sb_numerics INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:-mavx2 -mfma -mf16c -mavx512f>)
  target_compile_definitions(sb_numerics INTERFACE SB_HAVE_AVX2=1 SB_HAVE_AVX512=1)
elseif(SAMEBITS_SIMD_LEVEL STREQUAL "AVX2")
  target_compile_options(sb_numerics INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-mavx2 -mfma -mf16c>)
  target_compile_definitions(sb_numerics INTERFACE SB_HAVE_AVX2=1)
endif()

# Recorded in every run file (docs/FORMAT.md): what the compiler was told about floating point.
set(SAMEBITS_FP_FLAGS_TEXT
  "host: -ffp-contract=off -fno-fast-math -fno-math-errno; simd: ${SAMEBITS_SIMD_LEVEL}; cuda: --fmad=false --prec-div=true --prec-sqrt=true --ftz=false"
  CACHE INTERNAL "floating-point flags, as text")
