# cmake -DSOURCE_DIR=… -DSCALAR_DIR=… -DTOOL=… -P core_build_invariance.cmake
# Configures the `scalar` preset (-O0, SAMEBITS_SIMD=SCALAR) in SCALAR_DIR, builds its
# core_fingerprint, and compares its output with TOOL's (this build): they must be identical.
foreach(_v SOURCE_DIR SCALAR_DIR TOOL)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "core_build_invariance.cmake needs -D${_v}=…")
  endif()
endforeach()

execute_process(COMMAND ${TOOL} OUTPUT_VARIABLE _main RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} failed (${_rc}): ${_err}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --preset scalar -B ${SCALAR_DIR} -DSAMEBITS_TESTS=ON
                WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "configuring the scalar build in ${SCALAR_DIR} failed:\n${_out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${SCALAR_DIR} --target core_fingerprint --parallel 2
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "building core_fingerprint in ${SCALAR_DIR} failed:\n${_out}")
endif()
execute_process(COMMAND ${SCALAR_DIR}/bin/tests/core_fingerprint OUTPUT_VARIABLE _scalar
                RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the scalar core_fingerprint failed (${_rc}): ${_err}")
endif()

if(NOT _main STREQUAL _scalar)
  message(FATAL_ERROR "the -O0 scalar build computes other bits than this build.\n"
                      "this build:\n${_main}\nscalar -O0 build:\n${_scalar}")
endif()
string(REGEX MATCHALL "\n" _lines "${_main}")
list(LENGTH _lines _n)
message(STATUS "core_fingerprint: ${_n} fingerprints identical in this build and the -O0 scalar build")
