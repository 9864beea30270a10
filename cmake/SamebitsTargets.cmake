# Small helpers that keep the per-folder CMakeLists short.

set(SAMEBITS_WARNINGS -Wall -Wextra -Wshadow -Wno-unused-parameter)

# sb_glob(VAR dir patterns...): the folder's sources, re-globbed at build time.
function(sb_glob var dir)
  set(_files "")
  foreach(_pattern IN LISTS ARGN)
    file(GLOB _found CONFIGURE_DEPENDS "${dir}/${_pattern}")
    list(APPEND _files ${_found})
  endforeach()
  list(SORT _files)
  set(${var} ${_files} PARENT_SCOPE)
endfunction()

# sb_target_defaults(target): warnings and the numerics flags every samebits target carries.
function(sb_target_defaults target)
  target_link_libraries(${target} PUBLIC sb_numerics)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${SAMEBITS_WARNINGS}>)
endfunction()

# sb_add_test(NAME name SOURCES files... LABELS labels... [LIBS libs...] [ARGS args...]
#             [PROCESSORS n] [TIMEOUT s])
# One doctest executable, registered with CTest. Exit code 77 means "skipped" (no GPU, no MPI).
function(sb_add_test)
  cmake_parse_arguments(T "" "NAME;PROCESSORS;TIMEOUT" "SOURCES;LABELS;LIBS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  sb_target_defaults(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE sb_test_main doctest::doctest ${T_LIBS})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} ${T_ARGS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT})
  if(T_PROCESSORS)
    set_tests_properties(${T_NAME} PROPERTIES PROCESSORS ${T_PROCESSORS})
  endif()
endfunction()
