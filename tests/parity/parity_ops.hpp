// The parity harness's table: for each op of core/base/include/samebits/core/backend_op_list.hpp,
// the test of tests/parity that runs it on the CPU and on CUDA and compares the bits, and the call
// in that file that reaches the op (the op itself, or the entry point that runs it). An op the CUDA
// backend does not implement would be marked cpu_only. test_parity_table (tests/unit, no GPU)
// fails when an op of the list has no entry, an entry names no op, or its file lacks the call.
#pragma once
#include <string_view>

namespace sb::test {

struct ParityOp {
  std::string_view op;    // the list's name
  std::string_view file;  // tests/parity/<file>
  std::string_view via;   // the call in that file that runs the op on both backends
  bool cpu_only = false;  // no CUDA implementation: no parity test, the CPU's unit tests only
};

inline constexpr ParityOp kParityOps[] = {
    {"bias_forward", "test_parity_gemm.cpp", "matmul_forward"},
    {"bias_backward", "test_parity_gemm.cpp", "matmul_backward"},
    {"layernorm_forward", "test_parity_norm.cpp", "layernorm_forward"},
    {"layernorm_backward", "test_parity_norm.cpp", "layernorm_backward"},
    {"rmsnorm_forward", "test_parity_norm.cpp", "rmsnorm_forward"},
    {"rmsnorm_backward", "test_parity_norm.cpp", "rmsnorm_backward"},
    {"attention_forward", "test_parity_attention.cpp", "attention_forward"},
    {"attention_backward", "test_parity_attention.cpp", "attention_backward"},
    {"qk_max_keys", "test_parity_qk_clip.cpp", "check_identical"},
    {"qk_clip_scale", "test_parity_qk_clip.cpp", "check_identical"},
    {"gelu_forward", "test_parity_pointwise.cpp", "gelu_forward"},
    {"gelu_backward", "test_parity_pointwise.cpp", "gelu_backward"},
    {"rope_forward", "test_parity_pointwise.cpp", "rope_forward"},
    {"rope_backward", "test_parity_pointwise.cpp", "rope_backward"},
    {"kv_repeat_forward", "test_parity_pointwise.cpp", "kv_repeat_forward"},
    {"kv_repeat_backward", "test_parity_pointwise.cpp", "kv_repeat_backward"},
    {"qk_norm_forward", "test_parity_norm.cpp", "qk_norm_forward"},
    {"qk_norm_backward", "test_parity_norm.cpp", "qk_norm_backward"},
    {"moe_gather", "test_parity_moe.cpp", "moe_gather"},
    {"moe_scatter_add", "test_parity_moe.cpp", "moe_scatter_add"},
    {"moe_combine", "test_parity_moe.cpp", "moe_combine"},
    {"moe_combine_backward", "test_parity_moe.cpp", "moe_combine_backward"},
    {"swiglu_forward", "test_parity_pointwise.cpp", "swiglu_forward"},
    {"swiglu_backward", "test_parity_pointwise.cpp", "swiglu_backward"},
    {"softmax_xent_forward", "test_parity_softmax_xent.cpp", "softmax_xent_forward"},
    {"softmax_xent_backward", "test_parity_softmax_xent.cpp", "softmax_xent_backward"},
    {"xent_shard_max", "test_parity_xent_shard.cpp", "xent_shard_max"},
    {"xent_shard_sum", "test_parity_xent_shard.cpp", "xent_shard_sum"},
    {"xent_shard_loss", "test_parity_xent_shard.cpp", "xent_shard_loss"},
    {"embedding_forward", "test_parity_pointwise.cpp", "embedding_forward"},
    {"embedding_backward", "test_parity_pointwise.cpp", "embedding_backward"},
    {"residual_forward", "test_parity_pointwise.cpp", "residual_forward"},
    {"gradient_mean", "test_parity_mean.cpp", "gradient_mean"},
    {"native_loss_mean", "test_parity_mean.cpp", "native_loss_mean"},
};

}  // namespace sb::test
