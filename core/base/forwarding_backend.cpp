// ForwardingBackend (forwarding_backend.hpp): every op passed to the inner backend unchanged.
#include "samebits/core/forwarding_backend.hpp"

namespace sb {

void ForwardingBackend::set_numerics(const Numerics& n) {
  Backend::set_numerics(n);
  inner_.set_numerics(n);
}

void ForwardingBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  count_from_host(bytes);
  inner_.copy_from_host(dst, host_src, bytes);
}

void ForwardingBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  count_to_host(bytes);
  inner_.copy_to_host(host_dst, src, bytes);
}

void ForwardingBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                             float* c, int ldc, bool accumulate, Precision precision) {
  inner_.gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
}
void ForwardingBackend::syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) {
  inner_.syrk(ta, n, k, a, lda, c, ldc, precision);
}
bool ForwardingBackend::gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C,
                                  int OC) {
  return inner_.gemm_bias(out, inp, w, bias, N, C, OC);
}
void ForwardingBackend::bias_forward(float* out, const float* bias, int N, int OC) {
  inner_.bias_forward(out, bias, N, OC);
}
void ForwardingBackend::bias_backward(float* dbias, const float* dout, int N, int OC) {
  inner_.bias_backward(dbias, dout, N, OC);
}
void ForwardingBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                          const float* b, int N, int C) {
  inner_.layernorm_forward(out, mean, rstd, inp, w, b, N, C);
}
void ForwardingBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                           const float* w, const float* mean, const float* rstd, int N, int C) {
  inner_.layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
void ForwardingBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C) {
  inner_.rmsnorm_forward(out, rstd, inp, w, N, C);
}
void ForwardingBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                         const float* rstd, int N, int C) {
  inner_.rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
}
void ForwardingBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  inner_.attention_forward(out, att, qkv, B, T, C, NH);
}
void ForwardingBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                                           const float* att, int B, int T, int C, int NH) {
  inner_.attention_backward(dqkv, datt, dout, qkv, att, B, T, C, NH);
}
void ForwardingBackend::qk_max_keys(int32_t* keys, const float* qkv, int B, int T, int C, int NH) {
  inner_.qk_max_keys(keys, qkv, B, T, C, NH);
}
void ForwardingBackend::qk_clip_scale(float* x, int64_t n, float factor) { inner_.qk_clip_scale(x, n, factor); }
void ForwardingBackend::gelu_forward(float* out, const float* inp, int64_t n) { inner_.gelu_forward(out, inp, n); }
void ForwardingBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  inner_.gelu_backward(dinp, inp, dout, n);
}
void ForwardingBackend::softmax_xent_forward(float* losses, float* stats, const float* logits, const int32_t* targets,
                                             int N, int V) {
  inner_.softmax_xent_forward(losses, stats, logits, targets, N, V);
}
void ForwardingBackend::softmax_xent_backward(float* dlogits, const float* logits, const float* stats,
                                              const int32_t* targets, int N, int V, float loss_scale) {
  inner_.softmax_xent_backward(dlogits, logits, stats, targets, N, V, loss_scale);
}
void ForwardingBackend::xent_shard_max(float* max, const float* logits, int N, int V, bool accumulate) {
  inner_.xent_shard_max(max, logits, N, V, accumulate);
}
void ForwardingBackend::xent_shard_sum(float* part, const float* logits, const float* max, const int32_t* targets,
                                       int N, int V, int first, bool accumulate) {
  inner_.xent_shard_sum(part, logits, max, targets, N, V, first, accumulate);
}
void ForwardingBackend::xent_shard_loss(float* losses, float* stats, const float* part, const float* max, int N) {
  inner_.xent_shard_loss(losses, stats, part, max, N);
}
void ForwardingBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                                          int T, int C, VocabRows rows) {
  inner_.embedding_forward(out, tokens, wte, wpe, B, T, C, rows);
}
void ForwardingBackend::embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                           int T, int C, int V, VocabRows rows) {
  inner_.embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V, rows);
}
void ForwardingBackend::residual_forward(float* out, const float* a, const float* b, int64_t n) {
  inner_.residual_forward(out, a, b, n);
}

}  // namespace sb
