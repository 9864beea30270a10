# Every dependency through find_package (or a small finder where Debian ships no CMake config).
# Required ones stop the configure with the package to install; optional ones are reported.

set(SAMEBITS_MISSING_OPTIONAL "")
macro(sb_report_missing what package)
  message(WARNING "samebits: ${what} not found (Debian package: ${package}); the parts that need it are not built. Run scripts/setup to install it.")
  list(APPEND SAMEBITS_MISSING_OPTIONAL "${what}")
endmacro()

# sb_find_header_library(TARGET HEADER LIB VAR [HINTS dirs…]): the INTERFACE target TARGET over
# HEADER's folder and library LIB when both are found; VAR set ON or OFF accordingly.
macro(sb_find_header_library target header lib var)
  cmake_parse_arguments(_F "" "" "HINTS" ${ARGN})
  find_path(${var}_INCLUDE ${header} HINTS ${_F_HINTS})
  find_library(${var}_LIBRARY ${lib} HINTS ${_F_HINTS})
  if(${var}_INCLUDE AND ${var}_LIBRARY)
    set(${var} ON)
    add_library(${target} INTERFACE)
    target_include_directories(${target} SYSTEM INTERFACE ${${var}_INCLUDE})
    target_link_libraries(${target} INTERFACE ${${var}_LIBRARY})
  else()
    set(${var} OFF)
  endif()
endmacro()

find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)

find_package(HDF5 COMPONENTS C)
if(NOT HDF5_FOUND)
  message(FATAL_ERROR "samebits: HDF5 not found. Install libhdf5-dev (scripts/setup does).")
endif()
add_library(sb_hdf5 INTERFACE)
target_include_directories(sb_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_link_libraries(sb_hdf5 INTERFACE ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
target_compile_definitions(sb_hdf5 INTERFACE ${HDF5_DEFINITIONS} H5_USE_110_API_DEFAULT=1)

find_package(Boost 1.71 REQUIRED COMPONENTS program_options)

find_package(OpenBLAS CONFIG QUIET)
if(NOT OpenBLAS_FOUND)
  message(FATAL_ERROR "samebits: OpenBLAS not found. Install libopenblas-dev (scripts/setup does).")
endif()
add_library(sb_openblas INTERFACE)
find_path(SB_CBLAS_INCLUDE cblas.h PATHS ${OpenBLAS_INCLUDE_DIRS} /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas)
target_include_directories(sb_openblas SYSTEM INTERFACE ${SB_CBLAS_INCLUDE} ${OpenBLAS_INCLUDE_DIRS})
target_link_libraries(sb_openblas INTERFACE ${OpenBLAS_LIBRARIES})

find_path(SB_XXHASH_INCLUDE xxhash.h)
find_library(SB_XXHASH_LIBRARY xxhash)
if(NOT SB_XXHASH_INCLUDE OR NOT SB_XXHASH_LIBRARY)
  message(FATAL_ERROR "samebits: xxHash not found. Install libxxhash-dev (scripts/setup does).")
endif()
add_library(sb_xxhash INTERFACE)
target_include_directories(sb_xxhash SYSTEM INTERFACE ${SB_XXHASH_INCLUDE})
target_link_libraries(sb_xxhash INTERFACE ${SB_XXHASH_LIBRARY})

find_package(MPI COMPONENTS CXX)
if(MPI_CXX_FOUND)
  set(SAMEBITS_HAVE_MPI ON)
else()
  set(SAMEBITS_HAVE_MPI OFF)
  sb_report_missing("MPI" "libopenmpi-dev openmpi-bin")
endif()

find_package(doctest CONFIG)
if(NOT doctest_FOUND AND SAMEBITS_TESTS)
  message(FATAL_ERROR "samebits: doctest not found. Install doctest-dev (scripts/setup does) or configure with -DSAMEBITS_TESTS=OFF.")
endif()

find_package(benchmark CONFIG)
if(NOT benchmark_FOUND)
  sb_report_missing("Google Benchmark" "libbenchmark-dev")
endif()

# oneDNN: a vendor int8 GEMM for the exact GEMM's slice products (SAMEBITS_ISA=onednn|amx,
# core/cpu/exact_onednn.cpp); an exact integer product is the same whatever kernel computes it.
# A small finder: Debian's dnnl-config.cmake demands OpenCL, which the CPU engine does not need.
sb_find_header_library(sb_dnnl dnnl.hpp dnnl SAMEBITS_HAVE_ONEDNN)
if(NOT SAMEBITS_HAVE_ONEDNN)
  sb_report_missing("oneDNN" "libdnnl-dev")
endif()

# MPFR: the correctly rounded reference of the math and exact-sum tests.
find_path(SB_MPFR_INCLUDE mpfr.h)
find_library(SB_MPFR_LIBRARY mpfr)
find_library(SB_GMP_LIBRARY gmp)
if(SB_MPFR_INCLUDE AND SB_MPFR_LIBRARY AND SB_GMP_LIBRARY)
  add_library(sb_mpfr INTERFACE)
  target_include_directories(sb_mpfr SYSTEM INTERFACE ${SB_MPFR_INCLUDE})
  target_link_libraries(sb_mpfr INTERFACE ${SB_MPFR_LIBRARY} ${SB_GMP_LIBRARY})
else()
  sb_report_missing("MPFR" "libmpfr-dev libgmp-dev")
endif()

if(SAMEBITS_HAVE_CUDA)
  find_package(CUDAToolkit REQUIRED)
  foreach(_lib cublas curand)
    if(NOT TARGET CUDA::${_lib})
      message(FATAL_ERROR "samebits: CUDA toolkit found but CUDA::${_lib} is missing")
    endif()
  endforeach()
  sb_find_header_library(sb_nccl nccl.h nccl SAMEBITS_HAVE_NCCL HINTS ${CUDAToolkit_INCLUDE_DIRS}
                         ${CUDAToolkit_LIBRARY_DIR})
  if(NOT SAMEBITS_HAVE_NCCL)
    sb_report_missing("NCCL" "libnccl-dev")
  endif()
endif()

# cuRAND's host generator is the reference for samebits' Philox (docs/CONTRACT.md rule 9); it runs
# without a GPU, so the CPU tests use it whenever the toolkit is installed.
find_package(CUDAToolkit QUIET)
if(TARGET CUDA::curand)
  set(SAMEBITS_HAVE_CURAND ON)
else()
  set(SAMEBITS_HAVE_CURAND OFF)
  sb_report_missing("cuRAND (CUDA toolkit)" "nvidia-cuda-toolkit")
endif()

if(SAMEBITS_MISSING_OPTIONAL)
  message(STATUS "samebits: optional dependencies missing: ${SAMEBITS_MISSING_OPTIONAL}")
endif()
