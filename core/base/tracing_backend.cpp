// TracingBackend (tracing_backend.hpp): each op's regions — what it reads, what it writes, as
// backend_op_list.hpp names them — hashed around the inner backend's call. A region is `rows`
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

// allreduce=native's division of the summed gradient: inside the trainer's `allreduce gradient`
// row (the collective's output divided by the batch, docs/TRACE.md), so no row here.
void TracingBackend::gradient_mean(float* x, int64_t n, float divisor) {
  ForwardingBackend::gradient_mean(x, n, divisor);
}

// Every op of the list but those traced by hand: the regions it reads, the call, the regions it
// writes.
#define SB_UNPAREN(...) __VA_ARGS__
#define SB_BACKEND_OP(name, params, args, reads, writes, shape) \
  void TracingBackend::name params {                            \
    OpRow row(*this, #name, {SB_UNPAREN reads});                \
    ForwardingBackend::name args;                               \
    row.done({SB_UNPAREN writes}, {SB_UNPAREN shape});          \
  }
#define SB_BACKEND_OP_TRACED_BY_HAND(name, params, args)
#include "samebits/core/backend_op_list.hpp"
#undef SB_UNPAREN

}  // namespace sb
