# Included by the cmake -P scripts that compare this build with the `scalar` preset's (-O0,
# SAMEBITS_SIMD=SCALAR): core_build_invariance.cmake and invariance_catalog.cmake.

# Fails naming `script` unless every variable in ARGN was given (-D<name>=…).
function(sb_require_defines script)
  foreach(_v ${ARGN})
    if(NOT DEFINED ${_v})
      message(FATAL_ERROR "${script} needs -D${_v}=…")
    endif()
  endforeach()
endfunction()

# Configures the scalar preset in scalar_dir (from source_dir), builds its tool `target` there
# (JOBS parallel jobs, default 2) and runs it, its standard output into out_file.
function(sb_run_scalar_tool source_dir scalar_dir target out_file)
  execute_process(COMMAND ${CMAKE_COMMAND} --preset scalar -B ${scalar_dir} -DSAMEBITS_TESTS=ON
                  WORKING_DIRECTORY ${source_dir} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "configuring the scalar build in ${scalar_dir} failed:\n${_out}")
  endif()
  set(_jobs 2)
  if(DEFINED JOBS)
    set(_jobs ${JOBS})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${scalar_dir} --target ${target} --parallel ${_jobs}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "building ${target} in ${scalar_dir} failed:\n${_out}")
  endif()
  execute_process(COMMAND ${scalar_dir}/bin/tests/${target} OUTPUT_FILE ${out_file} RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "the scalar ${target} failed (${_rc}): ${_err}")
  endif()
endfunction()
