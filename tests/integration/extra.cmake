# Integration tests that need more than the default registration (included by tests/CMakeLists.txt).

# The optimizer oracle: optim_oracle_export writes one Muon and one AdamW step (HDF5);
# tests/oracle/optim_oracle.py recomputes them in PyTorch float64 with Debian's /usr/bin/python3
# (python3-torch, python3-h5py) and requires relative errors <= 1e-5 (fp32) plus the Newton–Schulz
# singular-value band. Exit 77 (skipped) when that python lacks torch.
add_executable(optim_oracle_export ${CMAKE_CURRENT_SOURCE_DIR}/oracle/optim_oracle_export.cpp)
sb_target_defaults(optim_oracle_export)
target_link_libraries(optim_oracle_export PRIVATE sb_core sb_hdf5)
set_target_properties(optim_oracle_export PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
if(EXISTS /usr/bin/python3)
  add_test(NAME test_optim_oracle_pytorch
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/oracle/optim_oracle.py
                   --export $<TARGET_FILE:optim_oracle_export>)
  set_tests_properties(test_optim_oracle_pytorch PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
