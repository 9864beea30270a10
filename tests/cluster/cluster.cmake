# The cluster test (labels cluster, slow): tests/cluster/test_cluster.sh runs the Slurm recipes and
# their faults on scripts/cluster's namespace hosts (root; it installs Slurm and munge when missing).
# Not in the default suite: `ctest --test-dir build/release -L cluster` (docs/DISTRIBUTED.md §9).
if(SAMEBITS_HAVE_MPI)
  add_test(NAME test_cluster COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_cluster.sh $<TARGET_FILE:samebits>
                                     ${CMAKE_BINARY_DIR}/cluster_test)
  set_tests_properties(test_cluster PROPERTIES LABELS "cluster;slow" SKIP_RETURN_CODE 77 TIMEOUT 1800
                                               PROCESSORS 2 RESOURCE_LOCK mpi_ranks)
endif()
