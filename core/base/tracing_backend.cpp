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

void TracingBackend::gemm(const ops::GemmProblem& g) {
  // A k-split product passes untraced; one with a bias is traced as the gemm then bias_forward it
  // equals bitwise (backend.hpp), so a backend that fuses them and one that does not give the same
  // stream.
  if (tracer() == nullptr || g.group != nullptr) return ForwardingBackend::gemm(g);
  if (g.bias != nullptr) {
    gemm(g.with_bias(nullptr));
    return bias_forward(g.c, g.bias, g.m, g.n);
  }
  OpRow row(*this, "gemm",
            {operand(g.a, g.ta, g.m, g.k, g.lda), operand(g.b, g.tb, g.k, g.n, g.ldb),
             g.accumulate ? matrix(g.c, g.m, g.n, g.ldc) : Region{}});
  ForwardingBackend::gemm(g);
  row.done({matrix(g.c, g.m, g.n, g.ldc)}, {g.m, g.n});
}

void TracingBackend::syrk(const ops::GemmProblem& g) {
  OpRow row(*this, "syrk", {operand(g.a, g.ta, g.n, g.k, g.lda)});
  ForwardingBackend::syrk(g);
  row.done({matrix(g.c, g.n, g.n, g.ldc)}, {g.n, g.n});
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
