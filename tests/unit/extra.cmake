# Unit tests that need more than the default registration (included by tests/CMakeLists.txt).

# Exhaustive fp32 -> bf16/fp16 sweeps (2^32 inputs each): OpenMP over the machine's cores.
foreach(_t test_fp_formats test_fp16_f16c)
  target_link_libraries(${_t} PRIVATE OpenMP::OpenMP_CXX)
  set_tests_properties(${_t} PROPERTIES PROCESSORS 2)
endforeach()

# Philox is compared bit for bit with cuRAND's host generator, which runs without a GPU.
if(SAMEBITS_HAVE_CURAND)
  target_link_libraries(test_philox_curand PRIVATE CUDA::curand)
  target_compile_definitions(test_philox_curand PRIVATE SB_HAVE_CURAND=1)
endif()
