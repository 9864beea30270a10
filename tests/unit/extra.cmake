# Unit tests that need more than the default registration (included by tests/CMakeLists.txt).

# Exhaustive fp32 -> bf16/fp16 sweeps (2^32 inputs each): OpenMP over the cores; about 10 s each
# in release, minutes under the debug preset's sanitizers (hence the longer timeout).
foreach(_t test_fp_formats test_fp16_f16c)
  target_link_libraries(${_t} PRIVATE OpenMP::OpenMP_CXX)
  set_tests_properties(${_t} PROPERTIES PROCESSORS 2 TIMEOUT 1800)
endforeach()

# Philox is compared bit for bit with cuRAND's host generator, which runs without a GPU.
if(SAMEBITS_HAVE_CURAND)
  target_link_libraries(test_philox_curand PRIVATE CUDA::curand)
  target_compile_definitions(test_philox_curand PRIVATE SB_HAVE_CURAND=1)
endif()

# The device compiler must not contract a*b+c either: the shared probes compiled by nvcc with the
# project's flags are checked in their PTX (no GPU needed; contraction is decided before ptxas,
# which never fuses mul.rn/add.rn).
if(SAMEBITS_HAVE_CUDA)
  add_library(sb_no_contraction_probe OBJECT ${CMAKE_CURRENT_LIST_DIR}/no_contraction_probe.cu)
  sb_target_defaults(sb_no_contraction_probe)
  target_link_libraries(sb_no_contraction_probe PRIVATE sb_determinism)
  set_target_properties(sb_no_contraction_probe PROPERTIES CUDA_PTX_COMPILATION ON
                                                           CUDA_ARCHITECTURES 80)
  add_test(NAME test_no_contraction_ptx
           COMMAND ${CMAKE_COMMAND} -DPTX=$<TARGET_OBJECTS:sb_no_contraction_probe>
                   -P ${CMAKE_CURRENT_LIST_DIR}/check_no_fma_ptx.cmake)
  set_tests_properties(test_no_contraction_ptx PROPERTIES LABELS unit TIMEOUT 60)
endif()

# Fast-math and contraction flags are refused at configure time (cmake/Numerics.cmake).
add_test(NAME test_fast_math_refused
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                 -DWORK_DIR=${CMAKE_BINARY_DIR}/fast-math-check
                 -P ${CMAKE_CURRENT_LIST_DIR}/check_fast_math_refused.cmake)
set_tests_properties(test_fast_math_refused PROPERTIES LABELS unit TIMEOUT 300)

# The structure walk's tests build files with HDF5's own API (old-style groups, variable-length
# strings, dense link storage) to damage them.
if(TARGET test_h5_structure)
  target_link_libraries(test_h5_structure PRIVATE sb_hdf5)
endif()

# The layers of core/ (docs/ARCHITECTURE.md): no part can include, or link against, a part above
# it or beside it. check_layers.py takes each part's archive and include directories from here.
if(EXISTS /usr/bin/python3)
  set(_parts_json "")
  foreach(_part determinism datasets base cpu cuda model optim parallel io train)
    if(NOT TARGET sb_${_part})
      continue()
    endif()
    get_target_property(_type sb_${_part} TYPE)
    if(NOT _type STREQUAL "STATIC_LIBRARY")
      continue()
    endif()
    if(_part STREQUAL "determinism" OR _part STREQUAL "datasets")
      set(_own "${CMAKE_SOURCE_DIR}/${_part}/include")
    else()
      set(_own "${CMAKE_SOURCE_DIR}/core/${_part}/include")
    endif()
    string(APPEND _parts_json "${_sep}\"${_part}\": {\"archive\": \"$<TARGET_FILE:sb_${_part}>\", "
           "\"include\": \"${_own}\", "
           "\"include_dirs\": \"$<TARGET_PROPERTY:sb_${_part},INCLUDE_DIRECTORIES>\"}")
    set(_sep ",\n  ")
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/layers.json
       CONTENT "{\"cxx\": \"${CMAKE_CXX_COMPILER}\", \"nm\": \"${CMAKE_NM}\",\n \"parts\": {\n  ${_parts_json}}}\n")
  add_test(NAME test_layers
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_layers.py ${CMAKE_BINARY_DIR}/layers.json)
  set_tests_properties(test_layers PROPERTIES LABELS unit TIMEOUT 120)
  # The paths docs/ARCHITECTURE.md names exist; no file cites design notes outside the repository.
  add_test(NAME test_doc_paths COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_doc_paths.py ${CMAKE_SOURCE_DIR})
  set_tests_properties(test_doc_paths PROPERTIES LABELS unit TIMEOUT 60)
endif()

# The reader process's failure paths run in a test reader with misbehaving kinds.
add_executable(test_reader_probe ${CMAKE_CURRENT_LIST_DIR}/../support/reader_probe.cpp)
sb_target_defaults(test_reader_probe)
target_link_libraries(test_reader_probe PRIVATE sb_io)
set_target_properties(test_reader_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
add_dependencies(test_isolated_read test_reader_probe)
target_compile_definitions(test_isolated_read PRIVATE SB_TEST_READER="$<TARGET_FILE:test_reader_probe>")

# Every formula of core/base/include/samebits/core/ops/ is called by both backends, or is listed
# with its reason (check_ops_callers.py): a backend that restates a formula's arithmetic fails.
if(EXISTS /usr/bin/python3)
  add_test(NAME test_ops_callers COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_ops_callers.py
                                         ${CMAKE_SOURCE_DIR})
  set_tests_properties(test_ops_callers PROPERTIES LABELS unit TIMEOUT 60)
endif()

# test_parity_table reads the parity tests it checks from the source tree.
target_compile_definitions(test_parity_table PRIVATE SB_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
