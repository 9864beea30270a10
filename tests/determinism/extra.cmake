# Determinism tests that need more than the default registration (included by tests/CMakeLists.txt).

# Build invariance of the CPU training core (docs/CONTRACT.md, CPU: -O0 or -O3, scalar or any SIMD):
# core_fingerprint prints the fingerprints of a tiny GPT's loss and gradients; the test configures
# the `scalar` preset's build (-O0, no SIMD) in its own folder, builds only that tool there, and
# requires the same text as this build's tool.
add_executable(core_fingerprint ${CMAKE_CURRENT_LIST_DIR}/../tools/core_fingerprint.cpp)
sb_target_defaults(core_fingerprint)
target_link_libraries(core_fingerprint PRIVATE sb_core)
set_target_properties(core_fingerprint PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
add_test(NAME test_core_build_invariance
         COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                 -DSCALAR_DIR=${CMAKE_BINARY_DIR}/scalar-core
                 -DTOOL=$<TARGET_FILE:core_fingerprint>
                 -P ${CMAKE_CURRENT_LIST_DIR}/core_build_invariance.cmake)
set_tests_properties(test_core_build_invariance PROPERTIES LABELS determinism TIMEOUT 900 PROCESSORS 2)

# The invariance catalog (docs/INVARIANCE.md, tests/tools/invariance/): op_fingerprints prints each
# op case's output fingerprints (built here and in the scalar build for the SIMD-build column);
# invariance_catalog measures every other column and writes or checks the catalog. The test
# regenerates it and fails when docs/INVARIANCE.md differs (the vendor column aside). It shares
# the scalar build folder with test_core_build_invariance (one builds there at a time).
set(_sb_inv ${CMAKE_CURRENT_LIST_DIR}/../tools/invariance)
set(_sb_inv_cases ${_sb_inv}/op_cases_support.cpp ${_sb_inv}/op_cases_model.cpp ${_sb_inv}/op_cases_optim.cpp)
add_executable(op_fingerprints ${_sb_inv}/op_fingerprints.cpp ${_sb_inv_cases})
sb_target_defaults(op_fingerprints)
target_link_libraries(op_fingerprints PRIVATE sb_core)
target_include_directories(op_fingerprints PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools)
set_target_properties(op_fingerprints PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
add_executable(invariance_catalog ${_sb_inv}/invariance_catalog.cpp ${_sb_inv}/stream_cells.cpp ${_sb_inv_cases})
sb_target_defaults(invariance_catalog)
target_link_libraries(invariance_catalog PRIVATE sb_experiments)
target_include_directories(invariance_catalog PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../tools ${CMAKE_CURRENT_LIST_DIR}/..)
set_target_properties(invariance_catalog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
add_test(NAME test_invariance_catalog
         COMMAND ${CMAKE_COMMAND} -DMODE=check -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
                 -DSCALAR_DIR=${CMAKE_BINARY_DIR}/scalar-core
                 -DCATALOG=$<TARGET_FILE:invariance_catalog>
                 -P ${CMAKE_CURRENT_LIST_DIR}/invariance_catalog.cmake)
set_tests_properties(test_invariance_catalog PROPERTIES LABELS determinism TIMEOUT 900 PROCESSORS 2
                     RESOURCE_LOCK scalar_core_build)
set_tests_properties(test_core_build_invariance PROPERTIES RESOURCE_LOCK scalar_core_build)
