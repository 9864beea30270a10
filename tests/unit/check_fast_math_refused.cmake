# cmake -DSOURCE_DIR=… -DWORK_DIR=… -P check_fast_math_refused.cmake
# Configuring samebits with a flag that breaks the numerical contract must fail, naming the flag.
foreach(_flag_var "CMAKE_CXX_FLAGS=-ffast-math" "CMAKE_CXX_FLAGS=-O2 -Ofast" "CMAKE_CUDA_FLAGS=--use_fast_math"
                  "CMAKE_C_FLAGS=-ffp-contract=fast")
  string(MAKE_C_IDENTIFIER "${_flag_var}" _id)
  file(REMOVE_RECURSE "${WORK_DIR}/${_id}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/${_id} -DSAMEBITS_CUDA=OFF
                          -DSAMEBITS_TESTS=OFF -DSAMEBITS_BENCH=OFF "-D${_flag_var}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  file(REMOVE_RECURSE "${WORK_DIR}/${_id}")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "configuring with -D${_flag_var} succeeded; it must be refused")
  endif()
  if(NOT _err MATCHES "which breaks the")
    message(FATAL_ERROR "configuring with -D${_flag_var} failed without the numerics message:\n${_err}")
  endif()
  message(STATUS "refused as expected: -D${_flag_var}")
endforeach()
