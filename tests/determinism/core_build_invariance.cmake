# cmake -DSOURCE_DIR=… -DSCALAR_DIR=… -DTOOL=… -P core_build_invariance.cmake
# Configures the `scalar` preset (-O0, SAMEBITS_SIMD=SCALAR) in SCALAR_DIR, builds its
# core_fingerprint, and compares its output with TOOL's (this build): they must be identical.
include(${CMAKE_CURRENT_LIST_DIR}/scalar_build.cmake)
sb_require_defines(core_build_invariance.cmake SOURCE_DIR SCALAR_DIR TOOL)

execute_process(COMMAND ${TOOL} OUTPUT_VARIABLE _main RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} failed (${_rc}): ${_err}")
endif()

sb_run_scalar_tool(${SOURCE_DIR} ${SCALAR_DIR} core_fingerprint ${SCALAR_DIR}/core_fingerprint.txt)
file(READ ${SCALAR_DIR}/core_fingerprint.txt _scalar)

if(NOT _main STREQUAL _scalar)
  message(FATAL_ERROR "the -O0 scalar build computes other bits than this build.\n"
                      "this build:\n${_main}\nscalar -O0 build:\n${_scalar}")
endif()
string(REGEX MATCHALL "\n" _lines "${_main}")
list(LENGTH _lines _n)
message(STATUS "core_fingerprint: ${_n} fingerprints identical in this build and the -O0 scalar build")
