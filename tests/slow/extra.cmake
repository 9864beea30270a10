# Slow tests that need more than the default registration (included by tests/CMakeLists.txt).

# The long resealing fuzzer: the HDF5 C API for its variable-length-string copies.
if(TARGET test_hostile_files_slow)
  target_link_libraries(test_hostile_files_slow PRIVATE sb_hdf5)
  set_tests_properties(test_hostile_files_slow PROPERTIES TIMEOUT 7200)
endif()
