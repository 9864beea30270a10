// TracingBackend (tracing_backend.hpp): each op's regions — what it reads, what it writes, as the
// shapes of backend.hpp define them — hashed around the inner backend's call. A region is `rows`
// rows of `cols` 32-bit elements, `ld` apart (a GEMM operand); gathered to the host and hashed
// with det::fingerprint, so equal bits give equal hashes on every backend.
#include "samebits/core/tracing_backend.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <vector>

#include "samebits/core/ops/softmax_xent.hpp"
#include "trace_regions.hpp"

namespace sb {
namespace {

using trace_detail::flat;
using trace_detail::matrix;
using trace_detail::Region;

// One op's row on the wrapped backend's memory.
class OpRow : public trace_detail::OpRow {
 public:
  OpRow(TracingBackend& be, const char* op, std::initializer_list<Region> inputs)
      : trace_detail::OpRow(be.inner(), be.tracer(), op, inputs) {}
};

// Stored shape of op(X) (rows × cols) given transposition.
Region operand(const void* p, Trans t, int rows, int cols, int ld) {
  return t == Trans::no ? matrix(p, rows, cols, ld) : matrix(p, cols, rows, ld);
}

}  // namespace

void TracingBackend::gemm(Trans ta, Trans tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                          float* c, int ldc, bool accumulate, Precision precision) {
  OpRow row(*this, "gemm",
            {operand(a, ta, m, k, lda), operand(b, tb, k, n, ldb), accumulate ? matrix(c, m, n, ldc) : Region{}});
  ForwardingBackend::gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate, precision);
  row.done({matrix(c, m, n, ldc)}, {m, n});
}

void TracingBackend::syrk(Trans ta, int n, int k, const float* a, int lda, float* c, int ldc, Precision precision) {
  OpRow row(*this, "syrk", {operand(a, ta, n, k, lda)});
  ForwardingBackend::syrk(ta, n, k, a, lda, c, ldc, precision);
  row.done({matrix(c, n, n, ldc)}, {n, n});
}

bool TracingBackend::gemm_bias(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  if (tracer() == nullptr) return ForwardingBackend::gemm_bias(out, inp, w, bias, N, C, OC);
  // Traced as the gemm then bias_forward it equals bitwise (backend.hpp), so a backend that fuses
  // them and one that does not give the same stream.
  return false;
}

void TracingBackend::bias_forward(float* out, const float* bias, int N, int OC) {
  OpRow row(*this, "bias_forward", {flat(out, int64_t(N) * OC), flat(bias, OC)});
  ForwardingBackend::bias_forward(out, bias, N, OC);
  row.done({flat(out, int64_t(N) * OC)}, {N, OC});
}

void TracingBackend::bias_backward(float* dbias, const float* dout, int N, int OC) {
  OpRow row(*this, "bias_backward", {flat(dout, int64_t(N) * OC)});
  ForwardingBackend::bias_backward(dbias, dout, N, OC);
  row.done({flat(dbias, OC)}, {OC});
}

void TracingBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                       const float* b, int N, int C) {
  OpRow row(*this, "layernorm_forward", {flat(inp, int64_t(N) * C), flat(w, C), flat(b, C)});
  ForwardingBackend::layernorm_forward(out, mean, rstd, inp, w, b, N, C);
  row.done({flat(out, int64_t(N) * C), flat(mean, N), flat(rstd, N)}, {N, C});
}

void TracingBackend::layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                        const float* w, const float* mean, const float* rstd, int N, int C) {
  const int64_t NC = int64_t(N) * C;
  OpRow row(*this, "layernorm_backward", {flat(dout, NC), flat(inp, NC), flat(w, C), flat(mean, N), flat(rstd, N)});
  ForwardingBackend::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  row.done({flat(dinp, NC), flat(dw, C), flat(db, C)}, {N, C});
}

void TracingBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C) {
  OpRow row(*this, "rmsnorm_forward", {flat(inp, int64_t(N) * C), flat(w, C)});
  ForwardingBackend::rmsnorm_forward(out, rstd, inp, w, N, C);
  row.done({flat(out, int64_t(N) * C), flat(rstd, N)}, {N, C});
}

void TracingBackend::rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w,
                                      const float* rstd, int N, int C) {
  const int64_t NC = int64_t(N) * C;
  OpRow row(*this, "rmsnorm_backward", {flat(dout, NC), flat(inp, NC), flat(w, C), flat(rstd, N)});
  ForwardingBackend::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
  row.done({flat(dinp, NC), flat(dw, C)}, {N, C});
}

void TracingBackend::attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int64_t BT = int64_t(B) * T;
  OpRow row(*this, "attention_forward", {flat(qkv, BT * 3 * C)});
  ForwardingBackend::attention_forward(out, att, qkv, B, T, C, NH);
  row.done({flat(out, BT * C), flat(att, int64_t(B) * NH * T * T)}, {B, T, C});
}

void TracingBackend::attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv, const float* att,
                                        int B, int T, int C, int NH) {
  const int64_t BT = int64_t(B) * T;
  OpRow row(*this, "attention_backward",
            {flat(dout, BT * C), flat(qkv, BT * 3 * C), flat(att, int64_t(B) * NH * T * T)});
  ForwardingBackend::attention_backward(dqkv, datt, dout, qkv, att, B, T, C, NH);
  row.done({flat(dqkv, BT * 3 * C)}, {B, T, 3 * C});
}

void TracingBackend::qk_max_keys(int32_t* keys, const float* qkv, int B, int T, int C, int NH) {
  ForwardingBackend::qk_max_keys(keys, qkv, B, T, C, NH);
  if (tracer() == nullptr) return;
  // The row holds this call's maxima alone, from the lowest key: `keys` is a running max over the
  // leaves a rank computes, so its value depends on the ranks' partition of the leaves (their
  // merged maxima do not, trainer.cpp clip_qk); this call's do not either.
  std::vector<int32_t> lowest(static_cast<size_t>(NH), std::numeric_limits<int32_t>::min());
  Tensor own = inner().alloc(DType::i32, {NH});
  inner().copy_from_host(own.data(), lowest.data(), lowest.size() * sizeof(int32_t));
  OpRow row(*this, "qk_max_keys", {flat(qkv, int64_t(B) * T * 3 * C)});
  ForwardingBackend::qk_max_keys(static_cast<int32_t*>(own.data()), qkv, B, T, C, NH);
  row.done({flat(own.data(), NH)}, {NH});
}

void TracingBackend::qk_clip_scale(float* x, int64_t n, float factor) {
  OpRow row(*this, "qk_clip_scale", {flat(x, n)});
  ForwardingBackend::qk_clip_scale(x, n, factor);
  row.done({flat(x, n)}, {n});
}

void TracingBackend::gelu_forward(float* out, const float* inp, int64_t n) {
  OpRow row(*this, "gelu_forward", {flat(inp, n)});
  ForwardingBackend::gelu_forward(out, inp, n);
  row.done({flat(out, n)}, {n});
}

void TracingBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) {
  OpRow row(*this, "gelu_backward", {flat(inp, n), flat(dout, n)});
  ForwardingBackend::gelu_backward(dinp, inp, dout, n);
  row.done({flat(dinp, n)}, {n});
}

void TracingBackend::softmax_xent_forward(float* losses, float* stats, const float* logits, const int32_t* targets,
                                          int N, int V) {
  OpRow row(*this, "softmax_xent_forward", {flat(logits, int64_t(N) * V), flat(targets, N)});
  ForwardingBackend::softmax_xent_forward(losses, stats, logits, targets, N, V);
  row.done({flat(losses, N), flat(stats, 2 * int64_t(N))}, {N});
}

void TracingBackend::softmax_xent_backward(float* dlogits, const float* logits, const float* stats,
                                           const int32_t* targets, int N, int V, float loss_scale) {
  const int64_t NV = int64_t(N) * V;
  OpRow row(*this, "softmax_xent_backward", {flat(logits, NV), flat(stats, 2 * int64_t(N)), flat(targets, N)});
  ForwardingBackend::softmax_xent_backward(dlogits, logits, stats, targets, N, V, loss_scale);
  row.done({flat(dlogits, NV)}, {N, V});
}

void TracingBackend::xent_shard_max(float* max, const float* logits, int N, int V, bool accumulate) {
  OpRow row(*this, "xent_shard_max", {accumulate ? flat(max, N) : Region{}, flat(logits, int64_t(N) * V)});
  ForwardingBackend::xent_shard_max(max, logits, N, V, accumulate);
  row.done({flat(max, N)}, {N});
}

void TracingBackend::xent_shard_sum(float* part, const float* logits, const float* max, const int32_t* targets, int N,
                                    int V, int first, bool accumulate) {
  const int64_t P = int64_t(N) * ops::kXentPart;
  OpRow row(*this, "xent_shard_sum",
            {accumulate ? flat(part, P) : Region{}, flat(logits, int64_t(N) * V), flat(max, N), flat(targets, N)});
  ForwardingBackend::xent_shard_sum(part, logits, max, targets, N, V, first, accumulate);
  row.done({flat(part, P)}, {N, ops::kXentPart});
}

void TracingBackend::xent_shard_loss(float* losses, float* stats, const float* part, const float* max, int N) {
  OpRow row(*this, "xent_shard_loss", {flat(part, int64_t(N) * ops::kXentPart), flat(max, N)});
  ForwardingBackend::xent_shard_loss(losses, stats, part, max, N);
  row.done({flat(losses, N), flat(stats, 2 * int64_t(N))}, {N});
}

void TracingBackend::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                                       int T, int C, VocabRows rows) {
  OpRow row(*this, "embedding_forward",
            {flat(tokens, int64_t(B) * T), flat(wte, int64_t(rows.count()) * C), flat(wpe, int64_t(T) * C)});
  ForwardingBackend::embedding_forward(out, tokens, wte, wpe, B, T, C, rows);
  row.done({flat(out, int64_t(B) * T * C)}, {B, T, C});
}

void TracingBackend::embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                                        int T, int C, int V, VocabRows rows) {
  const int64_t table = int64_t(rows.count()) * C;
  OpRow row(*this, "embedding_backward",
            {flat(dwte, table), flat(dout, int64_t(B) * T * C), flat(tokens, int64_t(B) * T)});
  ForwardingBackend::embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V, rows);
  row.done({flat(dwte, table), flat(dwpe, int64_t(T) * C)}, {rows.count(), C});
}

void TracingBackend::residual_forward(float* out, const float* a, const float* b, int64_t n) {
  OpRow row(*this, "residual_forward", {flat(a, n), flat(b, n)});
  ForwardingBackend::residual_forward(out, a, b, n);
  row.done({flat(out, n)}, {n});
}

}  // namespace sb
