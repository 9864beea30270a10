# Integration tests that need more than the default registration (included by tests/CMakeLists.txt).

# PyTorch float64 oracles (Debian's /usr/bin/python3 with python3-torch, python3-h5py; exit 77,
# skipped, without torch): sb_add_oracle(NAME) builds tests/oracle/NAME_export.cpp, which writes
# the samebits side of its cases to HDF5, and registers test_NAME_pytorch, which runs
# tests/oracle/NAME.py on it (relative errors <= 1e-5 in fp32).
function(sb_add_oracle name)
  add_executable(${name}_export ${CMAKE_CURRENT_SOURCE_DIR}/oracle/${name}_export.cpp)
  sb_target_defaults(${name}_export)
  target_link_libraries(${name}_export PRIVATE sb_core sb_hdf5)
  set_target_properties(${name}_export PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
  if(EXISTS /usr/bin/python3)
    add_test(NAME test_${name}_pytorch
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/oracle/${name}.py
                     --export $<TARGET_FILE:${name}_export>)
    set_tests_properties(test_${name}_pytorch PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
endfunction()
# One Muon and one AdamW step, plus the Newton–Schulz singular-value band.
sb_add_oracle(optim_oracle)
# One Muon step of TP groups of 2 and 4 simulated ranks (threads) for optim.tp_mode blockwise,
# distributed and distributed_exact: every rank's update against the shard's own Newton–Schulz,
# or the full matrix's.
sb_add_oracle(tp_oracle)

# MPI data parallelism. mpi_train_driver trains a tiny GPT in its process's
# communicator (MPI under mpirun, local alone) and prints per-step fingerprints on rank 0; the
# test_mpi_* doctests launch it alone and under mpirun --oversubscribe (--allow-run-as-root when
# root) and compare. They exit 77 (skipped) when this build has no MPI or no mpirun.
add_executable(mpi_train_driver ${CMAKE_CURRENT_LIST_DIR}/../tools/mpi_train_driver.cpp)
sb_target_defaults(mpi_train_driver)
target_link_libraries(mpi_train_driver PRIVATE sb_experiments)  # --config: samebits train's parser
target_include_directories(mpi_train_driver PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
set_target_properties(mpi_train_driver PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
set(_sb_mpiexec "")
if(SAMEBITS_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  set(_sb_mpiexec ${MPIEXEC_EXECUTABLE})
endif()
set(_sb_driver_tests test_mpi_invariance test_mpi_resume test_mpi_native test_mpi_failure test_mpi_collectives
                     test_mpi_optim_variants)
# Every test that launches mpirun (integration/mpi_launch.hpp: the driver's, and the CLI's
# `mpirun samebits …`). Up to 4 oversubscribed ranks each; the failure test measures time, so MPI
# tests run alone.
foreach(_test ${_sb_driver_tests} test_cli_mpi test_cli_diff_mpi test_cli_tp test_cli_pp test_cli_moe test_cli_ep test_trace_mpi
              test_cli_exact_mpi test_cli_bf16_pairs
              test_resume_negative)
  if(TARGET ${_test})
    target_compile_definitions(${_test} PRIVATE SB_MPIEXEC="${_sb_mpiexec}")
    set_tests_properties(${_test} PROPERTIES PROCESSORS 2 RESOURCE_LOCK mpi_ranks)
  endif()
endforeach()
foreach(_test ${_sb_driver_tests})
  if(TARGET ${_test})
    target_compile_definitions(${_test} PRIVATE SB_MPI_DRIVER="$<TARGET_FILE:mpi_train_driver>")
    add_dependencies(${_test} mpi_train_driver)
  endif()
endforeach()

# Notebooks: samebits.analysis's unit tests (synthetic run files written with h5py, and tiny
# runs trained with `samebits train`), under unittest and pytest on this checkout's python/, then
# the notebooks executed headless with nbconvert on runs the test trains itself (into
# <build>/notebooks_out/), importing the package built here (<build>/python, when the Python
# module is built). Debian's /usr/bin/python3 (python3-h5py, -matplotlib, -nbconvert,
# -ipykernel); exit 77 (skipped) when it lacks them. The installed package is tested by
# test_python_venv (python/CMakeLists.txt).
if(EXISTS /usr/bin/python3)
  set(_sb_pythonpath ${CMAKE_SOURCE_DIR}/python)
  if(TARGET _samebits)
    set(_sb_pythonpath ${CMAKE_BINARY_DIR}/python)
  endif()
  add_test(NAME test_notebooks_package
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/notebooks/tests/run_tests.py)
  add_test(NAME test_notebooks_execute
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/notebooks/tests/run_notebooks.py
                   ${CMAKE_BINARY_DIR}/notebooks_out)
  add_test(NAME test_notebooks_pytest
           COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/notebooks/tests/run_pytest.py)
  set_tests_properties(test_notebooks_pytest PROPERTIES
                       LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 1500
                       ENVIRONMENT "SAMEBITS_BIN=$<TARGET_FILE:samebits>;OMP_WAIT_POLICY=PASSIVE;PYTHONPATH=${_sb_pythonpath}")
  set_tests_properties(test_notebooks_package test_notebooks_execute PROPERTIES
                       LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "SAMEBITS_BIN=$<TARGET_FILE:samebits>;MPLBACKEND=Agg;OMP_WAIT_POLICY=PASSIVE;PYTHONDONTWRITEBYTECODE=1;PYTHONPATH=${_sb_pythonpath}")
endif()

# samebits sweep: its last case runs a ranks = 2 cell under mpirun, so it shares the MPI
# tests' lock (they measure time).
if(TARGET test_sweep)
  set_tests_properties(test_sweep PROPERTIES RESOURCE_LOCK mpi_ranks)
endif()

# The resealing fuzzer writes variable-length strings with the HDF5 C API itself (the
# layout of older run files, which samebits no longer writes).
if(TARGET test_hostile_files)
  target_link_libraries(test_hostile_files PRIVATE sb_hdf5)
endif()

# bench/peers' Python parts (docs/PERFORMANCE.md §Peers side by side): a tiny PyTorch peer run and
# the report over a manifest with a MISSING peer (never passed). Exit 77 without torch or h5py.
if(EXISTS /usr/bin/python3)
  add_test(NAME test_bench_peers COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/bench_peers_check.py)
  set_tests_properties(test_bench_peers PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE;PYTHONDONTWRITEBYTECODE=1")
endif()

# A current HDF5 both ways (h5py's PyPI wheel ships a newer HDF5 than Debian's): its token files
# are read by `samebits data inspect`, and samebits' run files read the same under both h5pys.
# It installs from the package index: label network, outside the default suite (ctest -L network);
# skipped (77) when the index cannot be reached.
if(EXISTS /usr/bin/python3)
  add_test(NAME test_h5py_wheel
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/h5py_wheel.py --samebits $<TARGET_FILE:samebits>
                   --venv ${CMAKE_BINARY_DIR}/h5py_venv)
  set_tests_properties(test_h5py_wheel PROPERTIES LABELS "integration;network" SKIP_RETURN_CODE 77 TIMEOUT 900
                       ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE")
endif()

# A stop signal that finds a rank blocked in a collective (a peer stopped, as a lost host's):
# rank 0's watchdog marks the run file interrupted and exits 2 after its grace (docs/DISTRIBUTED.md §5).
if(SAMEBITS_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  add_test(NAME test_mpi_lost_peer COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_mpi_lost_peer.sh $<TARGET_FILE:samebits>
                                           ${MPIEXEC_EXECUTABLE})
  set_tests_properties(test_mpi_lost_peer PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300
                                                     PROCESSORS 2 RESOURCE_LOCK mpi_ranks)
endif()
