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
