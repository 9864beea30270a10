// Backend: the only way the model (and the trainer) computes. It owns memory on its device and
// runs each op's forward and backward in the canonical orders of docs/CONTRACT.md (or the vendor
// orders its Numerics select). Every pointer argument is memory of this backend; shapes are given
// in the comments, row-major, outermost first. N = B·T tokens of one leaf, in (b, t) order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/numerics.hpp"
#include "samebits/core/ops/gemm_problem.hpp"
#include "samebits/core/tensor.hpp"
#include "samebits/det/block_wire.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb {

class OptimKernels;  // optim/optim_kernels.hpp
namespace trace {
class Recorder;  // trace.hpp: the op-hash stream of a traced step
}

using det::WireRun;  // segments [first, last) of the exact all-reduce's wire (det/block_wire.hpp)

// Elements [offset, offset + numel) of a flat buffer: one tensor of a layout.
struct TensorSpan {
  size_t offset = 0, numel = 0;
};

// Per-tensor exact sums over flat buffers, accumulated where the backend keeps its memory; only
// read() brings anything (O(tensors) words) to the host. Exact (det::ExactSum, max of |x| bits),
// so any order, partition or launch gives the same values: the statistics' inputs
// (train/statistics.hpp).
class TensorSums {
 public:
  virtual ~TensorSums() = default;
  virtual void clear() = 0;
  // For each span t of flat: squares[t] += Σ x² (each square exact in fp64); when `moments`
  // also sums[t] += Σ x and max_abs[t] = max(max_abs[t], |x|).  flat: backend memory.
  virtual void add(const float* flat, bool moments) = 0;
  // squares[t] += Σ x² for the spans t in `tensors` alone (expert parallelism: a source rank's
  // share of this rank's experts' gradients). The default throws sb::Error: a backend whose sums
  // expert parallelism uses overrides it.
  virtual void add_squares_of(const float* flat, const std::vector<size_t>& tensors);
  // The sums so far, to the host: squares (spans); sums (spans) and max_abs (spans) when
  // non-null (max_abs as core/exact_norm.hpp max_abs: NaN when any |x| was NaN; 0 when empty).
  virtual void read(det::ExactSum* squares, det::ExactSum* sums, float* max_abs) = 0;
};
// The host loops (OpenMP over fixed blocks), for host memory: what the CPU backend makes.
std::unique_ptr<TensorSums> make_host_tensor_sums(std::vector<TensorSpan> spans);

// Bytes a backend copied between host memory and its own (copy_to_host, copy_from_host and its
// internal transfers), since construction: counted on every backend, the CPU's included.
struct HostTraffic {
  uint64_t to_host = 0, from_host = 0;
  HostTraffic operator-(const HostTraffic& earlier) const {
    return {to_host - earlier.to_host, from_host - earlier.from_host};
  }
};

// Rule 4: the exact sum of many leaves' fp32 gradients, kept as fixed-point integers (the frame of
// det::FixedAccumulator's default window) where the backend computes. add() is exact and
// associative, so any order or partition of the same leaves gives the same sums; round() rounds
// once, bitwise det::FixedAccumulator's rounding. Across ranks: the exact all-reduce of
// det/block_wire.hpp (parallel/exact_allreduce.hpp runs it): MAX of block_ranges(), encode(), uint64
// SUM of the words, decode() — or its reduce-scatter, encode and decode by runs of segments.
class GradAccumulator {
 public:
  virtual ~GradAccumulator() = default;
  virtual size_t size() const = 0;  // n: the gradient length
  virtual void clear() = 0;
  // sums += the exact value of grad.  grad: (n) fp32, backend memory.
  virtual void add(const float* grad) = 0;
  // add(a), then add(b) unless b is null; when `squares` is given, also squares->add(a, false)
  // (and b's): the leaf statistics' per-tensor Σg² of the same gradients. The same sums bit for bit
  // as those calls one after the other (the default, in backend.cpp); a backend may add both leaves
  // in one pass over its sums and take the squares while the gradients are in cache.
  // a, b: (n) fp32, backend memory; squares: made by the same backend.
  virtual void add_leaves(const float* a, const float* b, TensorSums* squares);
  // One add of grad's elements in `spans` (backend memory (n), the other elements counted as +0):
  // expert parallelism's add of a source rank's share of this rank's experts' gradients. The
  // default throws sb::Error: a backend whose accumulator expert parallelism uses overrides it.
  virtual void add_spans(const float* grad, const std::vector<TensorSpan>& spans);
  // out[i] = ops::leaf_mean(round(Σ grads)[i], divisor): the exact sum rounded once to fp32,
  // then one IEEE division (exact when divisor is a power of two).  out: (n), backend memory.
  // Throws sb::Error when a NaN, an Inf or a value beyond the window was added.
  virtual void round(float* out, float divisor) = 0;
  virtual uint64_t adds() const = 0;    // add() calls, summed over ranks after decode()
  virtual uint32_t status() const = 0;  // det::kFixed* bits
  // The bit ranges of every block (det::WireRange per det::kWireBlock elements), backend memory.
  virtual uint8_t* block_ranges() = 0;
  virtual size_t range_bytes() const = 0;
  // After the MAX all-reduce of block_ranges(): this rank's sums as wire words (backend memory,
  // *words of them, valid until the next call) — every segment in order (the all-reduce's wire).
  uint64_t* encode(uint64_t total_adds, size_t* words);
  // The words encode(total_adds, words) would give, after the MAX of block_ranges(): what a world
  // of one counts as its payload without encoding it (its SUM is the identity). The default
  // encodes and counts; a backend that can lay the wire out without writing it overrides this.
  virtual size_t wire_words(uint64_t total_adds) {
    uint64_t words = 0;
    encode(total_adds, {WireRun{0, det::wire_segments(static_cast<int64_t>(size()))}}, &words);
    return static_cast<size_t>(words);
  }
  // After the uint64 SUM of those words: the exact sums over all ranks, adds() = total_adds.
  void decode(uint64_t total_adds, uint32_t total_status);
  // The reduce-scatter's form of the two (parallel/exact_allreduce.hpp): the wire of the segments of
  // runs[0], runs[1], … one after another (a segment may appear in several runs); run_words[k]
  // (host) ← the words of runs[k]. Returns the buffer (backend memory, Σ run_words of them).
  virtual uint64_t* encode(uint64_t total_adds, const std::vector<WireRun>& runs, uint64_t* run_words) = 0;
  // After a uint64 SUM of (at least) the words decoded here: the segments of `runs` (ascending,
  // disjoint), read from the buffer at word first_word on, their words one after another, hold
  // the exact sums over all ranks; the other elements keep this rank's own sums. adds() =
  // total_adds, status() = total_status.
  virtual void decode(uint64_t total_adds, uint32_t total_status, const std::vector<WireRun>& runs,
                      size_t first_word) = 0;
  // The wire's segments: det::wire_segments(size()).
  int64_t segments() const;
  // Bytes the accumulator holds (its sums, block descriptors and wire buffer).
  virtual size_t memory_bytes() const = 0;
};

// The vocabulary rows [begin, end) an embedding table holds: all of them (begin 0, end V) in one
// process, a contiguous range under the vocabulary-parallel layout (tp_layout.hpp).
struct VocabRows {
  int begin = 0, end = 0;
  bool holds(int32_t v) const { return v >= begin && v < end; }
  int count() const { return end - begin; }
};

// The ranks over which one exact GEMM's k is split (numerics.gemm = exact: tensor parallelism's
// row-parallel products, ops::GemmProblem::split_over). Both reductions are of integers, so their
// results do not depend on the order the group combines them in. Host memory.
class ExactGroup {
 public:
  virtual ~ExactGroup() = default;
  virtual void max(int32_t* x, size_t n) = 0;   // x[i] ← the max over the group of x[i]
  virtual void sum(uint64_t* x, size_t n) = 0;  // x[i] ← Σ over the group of x[i], modulo 2^64
};

// Throws sb::Error unless g is a product Backend::gemm takes: sizes non-negative, a bias only on a
// contiguous fresh C (ldc == n, no accumulate).
void check_gemm(const ops::GemmProblem& g);

class Backend {
 public:
  explicit Backend(Numerics numerics) : numerics_(numerics) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual Device device() const = 0;
  virtual std::string describe() const = 0;  // "cpu (8 OpenMP threads, AVX512)", "cuda:0 H100 ..."
  // Fixed at construction: each backend resolves them once (its GEMM engine among them).
  const Numerics& numerics() const { return numerics_; }
  // The op-hash stream being recorded (trace.hpp), or null: only a TracingBackend sets one, and
  // only for the steps it traces; trace::Scope reads it (a load and a test when tracing is off).
  trace::Recorder* tracer() const { return tracer_; }

  // ---- memory -------------------------------------------------------------------------------
  // Zero-filled storage on this backend's device (64-byte aligned at least).
  virtual Tensor alloc(DType dtype, Shape shape) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void zero(void* dst, size_t bytes) = 0;
  virtual void synchronize() {}
  // The rule-4 accumulator for gradients of n floats (det::FixedWindow's default window).
  virtual std::unique_ptr<GradAccumulator> make_accumulator(size_t n) = 0;
  // numerics.leaf_sum=native's accumulator (native_accumulator.cpp): fp32 sums in add order,
  // sum = sum + grad by this backend's residual_forward, as a framework accumulates
  // gradients (PyTorch's AccumulateGrad). round() divides the rounded-as-added sum; status() reports
  // a NaN or an Inf in it; it has no exact wire (encode/decode throw).
  virtual std::unique_ptr<GradAccumulator> make_native_accumulator(size_t n);
  // The optimizers' loops and exact reductions on this backend's memory (optim/optim_kernels.hpp),
  // owned by the backend: one object for every optimizer, Newton–Schulz and the clip.
  virtual OptimKernels& optim_kernels() = 0;
  // Per-tensor exact sums over `spans` of flat buffers of this backend (TensorSums).
  virtual std::unique_ptr<TensorSums> make_tensor_sums(std::vector<TensorSpan> spans) = 0;
  // out[t] = det::fingerprint(flat + spans[t].offset, spans[t].numel) (XXH3-64 of the raw bits),
  // computed where flat lives; O(spans) words reach the host.  flat: backend memory.
  virtual void fingerprints(const float* flat, const std::vector<TensorSpan>& spans, uint64_t* out) = 0;
  // Host traffic so far (HostTraffic).
  const HostTraffic& host_traffic() const { return host_traffic_; }

  // ---- GEMM (rule 1) -----------------------------------------------------------------------
  // The product g describes (ops/gemm_problem.hpp), in this backend's numerics.gemm mode.
  // Canonical: C[i][j] = fma chain over p = 0..k-1 ascending of round(A[i][p]), round(B[p][j])
  // (ops/matmul.hpp canonical_dot), starting from +0, or from C's value when accumulate
  // (the chain continues). round = to g.precision (RNE), the identity for fp32. Vendor: sgemm with
  // beta = accumulate ? 1 : 0. With g.bias: then + bias[j] by ops::linear_out, bitwise the gemm
  // then bias_forward (a backend may fuse them: the CPU's canonical GEMM adds the bias after each
  // output's chain inside its own fork/join), except where the vendor's addmm starts C at the bias
  // and adds the product with β = 1 (the CPU's vendor mode; vendor bits). With g.group
  // (numerics.gemm = exact only): the rows' and columns' scales are the group's (a max of scale
  // codes), each rank's exact integer dots are summed over the group, and each element is rounded
  // once: the unsplit product's bits on every rank, however k is cut (docs/CONTRACT.md); a backend
  // without it refuses.
  virtual void gemm(const ops::GemmProblem& g) = 0;
  // C = op(A)·op(A)ᵀ (BLAS ssyrk's product, the whole matrix) for g = ops::syrk_problem(…).
  // Canonical: C[i][j] = the fma chain over p = 0..k-1 ascending of round(op(A)[i][p]),
  // round(op(A)[j][p]) from +0 — the gemm of g, bit for bit. Since fma(x, y, acc) = fma(y, x, acc),
  // C[j][i]'s chain is C[i][j]'s: a backend may compute one triangle and mirror it (half the
  // multiply-adds). For a symmetric S, syrk(S) is S·S, bitwise. Default: the plain gemm (the CPU's
  // vendor mode: OpenBLAS ssyrk).
  virtual void syrk(const ops::GemmProblem& g) { gemm(g); }

  // ---- ops: forward and backward. Backward ops overwrite their outputs unless stated. -------
  // out = inp·Wᵀ (+ bias): out[n][o] = canonical_dot(inp[n], W[o]) (+ bias[o], one addition).
  // GEMM operands in numerics().precision. Written once (core/backend.cpp): one gemm with the bias.
  void matmul_forward(float* out,         // (N, OC)
                      const float* inp,   // (N, C)
                      const float* w,     // (OC, C)
                      const float* bias,  // (OC) or null
                      int N, int C, int OC);
  // dinp = dout·W; dw = doutᵀ·inp (chain over tokens n ascending, rule 3); dbias by
  // bias_backward. dinp, dbias may be null. Written once (core/backend.cpp).
  void matmul_backward(float* dinp,        // (N, C) or null
                       float* dw,          // (OC, C)
                       float* dbias,       // (OC) or null
                       const float* dout,  // (N, OC)
                       const float* inp,   // (N, C)
                       const float* w,     // (OC, C)
                       int N, int C, int OC);
  // Every other op (bias, norms, attention, QK-clip, GELU, softmax + cross-entropy, embedding,
  // residual): one entry each in backend_op_list.hpp, with its shapes, its rule and what it reads
  // and writes.
#define SB_BACKEND_OP(name, params, ...) virtual void name params = 0;
#include "samebits/core/backend_op_list.hpp"

 protected:
  // Implementations count every host transfer here.
  void count_to_host(size_t bytes) { host_traffic_.to_host += bytes; }
  void count_from_host(size_t bytes) { host_traffic_.from_host += bytes; }
  void set_tracer(trace::Recorder* recorder) { tracer_ = recorder; }

 private:
  Numerics numerics_;
  HostTraffic host_traffic_;
  trace::Recorder* tracer_ = nullptr;
};

}  // namespace sb
