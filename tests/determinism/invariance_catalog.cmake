# cmake -DMODE=out|check -DSOURCE_DIR=… -DSCALAR_DIR=… -DCATALOG=… -P invariance_catalog.cmake
# Configures the `scalar` preset (-O0, SAMEBITS_SIMD=SCALAR) in SCALAR_DIR, builds its
# op_fingerprints and runs it (the SIMD-build column), then runs CATALOG (this build's
# invariance_catalog) with it and docs/invariance-cuda.tsv when present (the CUDA column):
# MODE=out writes SOURCE_DIR/docs/INVARIANCE.md (scripts/invariance), MODE=check compares with it.
# JOBS: parallel jobs of the scalar build (default 2).
include(${CMAKE_CURRENT_LIST_DIR}/scalar_build.cmake)
sb_require_defines(invariance_catalog.cmake MODE SOURCE_DIR SCALAR_DIR CATALOG)
set(_simd ${SCALAR_DIR}/op_fingerprints.txt)
sb_run_scalar_tool(${SOURCE_DIR} ${SCALAR_DIR} op_fingerprints ${_simd})

set(_cuda ${SOURCE_DIR}/docs/invariance-cuda.tsv)
if(MODE STREQUAL "out")
  set(_mode --out)
elseif(MODE STREQUAL "check")
  set(_mode --check)
else()
  message(FATAL_ERROR "MODE=${MODE}: expected out or check")
endif()
execute_process(COMMAND ${CATALOG} --simd ${_simd} --cuda ${_cuda} ${_mode} ${SOURCE_DIR}/docs/INVARIANCE.md
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${_out}${_err}")
endif()
message(STATUS "${_out}")

# MODE=check: the CUDA column's reading (the CPU side of scripts/gpu-check's row): a --cuda-column
# file's cells and device name land in the catalog, ops it lacks say "not run (no device)".
if(MODE STREQUAL "check")
  set(_fake ${SCALAR_DIR}/fake-cuda.tsv)
  file(WRITE ${_fake} "# the CUDA column\n# measured on a test device\ngemm\tmax 2 ULP, 1 % of 9805 differ\n")
  execute_process(COMMAND ${CATALOG} --simd ${_simd} --cuda ${_fake} --out ${SCALAR_DIR}/fake-catalog.md
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  file(READ ${SCALAR_DIR}/fake-catalog.md _md)
  string(REGEX MATCH "\n\\| `gemm` [^\n]*\\| max 2 ULP, 1 % of 9805 differ \\|\n" _gemm "${_md}")
  string(REGEX MATCH "\n\\| `syrk` [^\n]*\\| not run \\(no device\\) \\|\n" _syrk "${_md}")
  string(FIND "${_md}" "measured on a test device" _device)
  if(NOT _rc EQUAL 0 OR NOT _gemm OR NOT _syrk OR _device EQUAL -1)
    message(FATAL_ERROR "the catalog did not take its CUDA column from ${_fake}:\n${_out}${_err}\n${_md}")
  endif()
endif()
