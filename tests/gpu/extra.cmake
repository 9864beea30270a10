# GPU tests that need more than the default registration (included by tests/CMakeLists.txt when
# CUDA is built): the parity tests of tests/parity (CPU vs CUDA, bitwise; label gpu) and
# parity_train, the 50-step CPU-vs-GPU training comparison that scripts/gpu-check runs.
sb_glob(_sb_parity_tests ${CMAKE_CURRENT_LIST_DIR}/../parity "test_*.cpp")
foreach(_file IN LISTS _sb_parity_tests)
  get_filename_component(_name ${_file} NAME_WE)
  sb_add_test(NAME ${_name} SOURCES ${_file} LABELS gpu LIBS ${SB_TEST_LIBS} CUDA::cudart)
endforeach()

add_executable(parity_train ${CMAKE_CURRENT_LIST_DIR}/../parity/parity_train.cpp)
sb_target_defaults(parity_train)
target_link_libraries(parity_train PRIVATE sb_experiments CUDA::cudart)
target_include_directories(parity_train PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
set_target_properties(parity_train PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
