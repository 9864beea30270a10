# The PyTorch oracle (label integration): oracle_export writes a tiny GPT's weights, tokens, loss
# and gradients (HDF5); gpt_oracle.py recomputes them in PyTorch float64 with Debian's
# /usr/bin/python3 (python3-torch, python3-h5py) and requires relative errors <= 1e-5. Exit 77
# (skipped) when that python lacks torch.
add_executable(oracle_export ${CMAKE_CURRENT_LIST_DIR}/oracle_export.cpp)
sb_target_defaults(oracle_export)
target_link_libraries(oracle_export PRIVATE sb_core sb_hdf5)
set_target_properties(oracle_export PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
if(EXISTS /usr/bin/python3)
  add_test(NAME test_oracle_pytorch
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/gpt_oracle.py
                   --export $<TARGET_FILE:oracle_export>)
  set_tests_properties(test_oracle_pytorch PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
else()
  message(STATUS "samebits: /usr/bin/python3 not found; the PyTorch oracle test is not registered")
endif()

# The export oracle (label integration): `samebits export` files loaded into PyTorch give
# samebits' logits (export_logits) within 1e-5; also through transformers when it is installed.
add_executable(export_logits ${CMAKE_CURRENT_LIST_DIR}/export_logits.cpp)
sb_target_defaults(export_logits)
target_link_libraries(export_logits PRIVATE sb_experiments)
set_target_properties(export_logits PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
if(EXISTS /usr/bin/python3)
  add_test(NAME test_export_oracle
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/export_oracle.py
                   --samebits $<TARGET_FILE:samebits> --logits $<TARGET_FILE:export_logits>)
  set_tests_properties(test_export_oracle PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# The adaptive schedule's oracle (label integration): adaptive_lr_oracle.py runs samebits train
# with train.schedule=adaptive and recomputes every step's lr in float64 from the run file's
# recorded noise estimates (optim/adaptive_lr.hpp). Exit 77 (skipped) without h5py.
if(EXISTS /usr/bin/python3)
  add_test(NAME test_adaptive_lr_oracle
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/adaptive_lr_oracle.py
                   --samebits $<TARGET_FILE:samebits>
                   --config ${CMAKE_SOURCE_DIR}/experiments/configs/default.ini)
  set_tests_properties(test_adaptive_lr_oracle PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# The exact GEMM's integer oracle (label unit: seconds): exact_gemm_tool runs one product under
# numerics.gemm=exact on each SAMEBITS_ISA path this CPU has; exact_gemm_oracle.py recomputes the
# definition in Python integers and requires every bit. Exit 77 (skipped) without numpy.
add_executable(exact_gemm_tool ${CMAKE_CURRENT_LIST_DIR}/exact_gemm_tool.cpp)
sb_target_defaults(exact_gemm_tool)
target_link_libraries(exact_gemm_tool PRIVATE sb_core)
set_target_properties(exact_gemm_tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin/tests)
if(EXISTS /usr/bin/python3)
  add_test(NAME test_exact_gemm_oracle COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/exact_gemm_oracle.py
                                               --tool $<TARGET_FILE:exact_gemm_tool>)
  set_tests_properties(test_exact_gemm_oracle PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# Llama-shaped runs against transformers (label slow: a venv with torch and transformers from PyPI,
# kept between runs): `samebits export --format hf` computes the recorded validation loss in
# LlamaForCausalLM / Qwen3ForCausalLM, and a transformers model imported by --init computes
# samebits' first loss and exports back bit for bit (llama_hf_oracle.py). Exit 77 without the index.
if(EXISTS /usr/bin/python3)
  add_test(NAME test_llama_hf
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/llama_hf_oracle.py
                   --samebits $<TARGET_FILE:samebits> --venv ${CMAKE_BINARY_DIR}/hf_llama_venv)
  set_tests_properties(test_llama_hf PROPERTIES LABELS slow SKIP_RETURN_CODE 77 TIMEOUT 3600)
endif()
