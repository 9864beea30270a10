// samebits.torch.deterministic's native half (python/samebits/torch/deterministic.py): the kernels
// its ATen table runs on host fp32 memory a tensor's data_ptr gives — the CPU backend's GEMM
// (canonical or exact), LayerNorm, embedding gradient, and the host loops of
// samebits/core/cpu/host_ops.hpp — with the GIL released. Shapes and strides are checked on the
// Python side, which owns the memory.
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb::py {
namespace {

template <class T = float>
T* at(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

// One CPU backend per GEMM mode ("canonical", "exact"), kept (guarded by the GIL).
Backend& gemm_backend(const std::string& mode) {
  static std::map<std::string, std::unique_ptr<Backend>> backends;
  std::unique_ptr<Backend>& b = backends[mode];
  if (!b) {
    Numerics n = Numerics::deterministic();
    if (mode == "exact") {
      n.gemm = GemmMode::exact;
    } else {
      SB_CHECK(mode == "canonical", "samebits.torch.deterministic: gemm must be 'canonical' or 'exact', got '", mode,
               "'");
    }
    b = make_cpu_backend(n);
  }
  return *b;
}

// C[b] (m, n; ldc) ← op(A[b])·op(B[b]) (+ C[b] when accumulate) for b < batch, the operands
// batch_a, batch_b, batch_c elements apart: Backend::gemm's product per batch entry.
void gemm(const std::string& mode, bool ta, bool tb, int m, int n, int k, uintptr_t a, int lda, uintptr_t b, int ldb,
          uintptr_t c, int ldc, bool accumulate, int batch, int64_t batch_a, int64_t batch_b, int64_t batch_c) {
  Backend& backend = gemm_backend(mode);
  pyb::gil_scoped_release nogil;
  for (int i = 0; i < batch; ++i) {
    ops::GemmProblem g{ta ? Trans::yes : Trans::no,
                       tb ? Trans::yes : Trans::no,
                       m,
                       n,
                       k,
                       at<const float>(a) + i * batch_a,
                       lda,
                       at<const float>(b) + i * batch_b,
                       ldb,
                       at(c) + i * batch_c,
                       ldc,
                       accumulate};
    backend.gemm(g);
  }
}

void layernorm_forward(uintptr_t out, uintptr_t mean, uintptr_t rstd, uintptr_t inp, uintptr_t w, uintptr_t b, int N,
                       int C, float eps) {
  pyb::gil_scoped_release nogil;
  cpu::layernorm_rows(at(out), at(mean), at(rstd), at(inp), at(w), b ? at(b) : nullptr, N, C, ReduceMode::canonical,
                      eps);
}

void layernorm_backward(uintptr_t dinp, uintptr_t dw, uintptr_t db, uintptr_t dout, uintptr_t inp, uintptr_t w,
                        uintptr_t mean, uintptr_t rstd, int N, int C) {
  Backend& backend = gemm_backend("canonical");
  pyb::gil_scoped_release nogil;
  backend.layernorm_backward(at(dinp), at(dw), db ? at(db) : nullptr, at(dout), at(inp), at(w), at(mean), at(rstd), N,
                             C);
}

// dw[v] += dout[i] for every index i with tokens[i] == v, i ascending (dw zeroed by the caller).
void embedding_backward(uintptr_t dw, uintptr_t dout, uintptr_t tokens, int n, int C, int V) {
  Backend& backend = gemm_backend("canonical");
  pyb::gil_scoped_release nogil;
  backend.embedding_backward(at(dw), nullptr, at(dout), at<const int32_t>(tokens), 1, n, C, V, VocabRows{0, V});
}

// The trainer's fused softmax cross-entropy of N rows (Backend::softmax_xent_forward/backward):
// per-row losses and (max, denominator) stats; dlogits = ((softmax − onehot)/N)·loss_scale.
void xent_forward(uintptr_t losses, uintptr_t stats, uintptr_t logits, uintptr_t targets, int N, int V) {
  Backend& backend = gemm_backend("canonical");
  pyb::gil_scoped_release nogil;
  backend.softmax_xent_forward(at(losses), at(stats), at(logits), at<const int32_t>(targets), N, V);
}
void xent_backward(uintptr_t dlogits, uintptr_t logits, uintptr_t stats, uintptr_t targets, int N, int V,
                   float loss_scale) {
  Backend& backend = gemm_backend("canonical");
  pyb::gil_scoped_release nogil;
  backend.softmax_xent_backward(at(dlogits), at(logits), at(stats), at<const int32_t>(targets), N, V, loss_scale);
}

// The exact sum of n fp32 values divided by `count` and rounded once (the trainer's mean loss, rule 5).
float exact_mean(uintptr_t values, int64_t n, int64_t count) {
  SB_CHECK(count > 0, "samebits.torch: the mean of ", count, " values");
  det::ExactSum sum;
  sum.add(at<const float>(values), static_cast<size_t>(n));
  return static_cast<float>(sum.to_f64() / static_cast<double>(count));
}

cpu::Pointwise pointwise_of(const std::string& name) {
  static const std::map<std::string, cpu::Pointwise> names{
      {"exp", cpu::Pointwise::exp},           {"log", cpu::Pointwise::log},
      {"tanh", cpu::Pointwise::tanh},         {"sigmoid", cpu::Pointwise::sigmoid},
      {"silu", cpu::Pointwise::silu},         {"gelu_tanh", cpu::Pointwise::gelu_tanh},
      {"gelu_erf", cpu::Pointwise::gelu_erf}, {"sin", cpu::Pointwise::sin},
      {"cos", cpu::Pointwise::cos},           {"erf", cpu::Pointwise::erf}};
  const auto it = names.find(name);
  SB_CHECK(it != names.end(), "samebits.torch.deterministic: no pointwise function '", name, "'");
  return it->second;
}

cpu::Reduction reduction_of(const std::string& name) {
  static const std::map<std::string, cpu::Reduction> names{{"sum", cpu::Reduction::sum},
                                                           {"sumsq", cpu::Reduction::sumsq},
                                                           {"abssum", cpu::Reduction::abssum},
                                                           {"max", cpu::Reduction::max},
                                                           {"absmax", cpu::Reduction::absmax}};
  const auto it = names.find(name);
  SB_CHECK(it != names.end(), "samebits.torch.deterministic: no reduction '", name, "'");
  return it->second;
}

}  // namespace

void bind_torch_ops(pyb::module_& m) {
  using pyb::arg;
  m.def("_op_gemm", &gemm, arg("mode"), arg("ta"), arg("tb"), arg("m"), arg("n"), arg("k"), arg("a"), arg("lda"),
        arg("b"), arg("ldb"), arg("c"), arg("ldc"), arg("accumulate"), arg("batch"), arg("batch_a"), arg("batch_b"),
        arg("batch_c"), "Backend::gemm of the CPU backend in `mode` per batch entry (fp32 host memory).");
  m.def("_op_layernorm_forward", &layernorm_forward, arg("out"), arg("mean"), arg("rstd"), arg("inp"), arg("w"),
        arg("b"), arg("N"), arg("C"), arg("eps"), "LayerNorm rows with eps (b 0: no bias).");
  m.def("_op_layernorm_backward", &layernorm_backward, arg("dinp"), arg("dw"), arg("db"), arg("dout"), arg("inp"),
        arg("w"), arg("mean"), arg("rstd"), arg("N"), arg("C"), "Backend::layernorm_backward (db 0: none).");
  m.def("_op_embedding_backward", &embedding_backward, arg("dw"), arg("dout"), arg("tokens"), arg("n"), arg("C"),
        arg("V"), "dw[tokens[i]] += dout[i], i ascending (int32 tokens).");
  m.def("_op_xent_forward", &xent_forward, arg("losses"), arg("stats"), arg("logits"), arg("targets"), arg("N"),
        arg("V"));
  m.def("_op_xent_backward", &xent_backward, arg("dlogits"), arg("logits"), arg("stats"), arg("targets"), arg("N"),
        arg("V"), arg("loss_scale"));
  m.def("_exact_mean", &exact_mean, arg("values"), arg("n"), arg("count"),
        "fl32(exact Σ of n fp32 values / count): the trainer's mean loss.");
  m.def(
      "_op_softmax",
      [](uintptr_t out, uintptr_t inp, int64_t rows, int64_t cols, bool log) {
        pyb::gil_scoped_release nogil;
        cpu::softmax_rows(at(out), at(inp), rows, cols, log);
      },
      arg("out"), arg("inp"), arg("rows"), arg("cols"), arg("log"));
  m.def(
      "_op_softmax_backward",
      [](uintptr_t dinp, uintptr_t dout, uintptr_t out, int64_t rows, int64_t cols, bool log) {
        pyb::gil_scoped_release nogil;
        cpu::softmax_rows_backward(at(dinp), at(dout), at(out), rows, cols, log);
      },
      arg("dinp"), arg("dout"), arg("out"), arg("rows"), arg("cols"), arg("log"));
  m.def(
      "_op_reduce",
      [](const std::string& r, uintptr_t out, uintptr_t inp, int64_t outer, int64_t K, int64_t inner) {
        const cpu::Reduction kind = reduction_of(r);
        pyb::gil_scoped_release nogil;
        cpu::reduce_middle(kind, at(out), at(inp), outer, K, inner);
      },
      arg("reduction"), arg("out"), arg("inp"), arg("outer"), arg("K"), arg("inner"));
  m.def(
      "_op_pointwise",
      [](const std::string& f, uintptr_t out, uintptr_t inp, int64_t n) {
        const cpu::Pointwise kind = pointwise_of(f);
        pyb::gil_scoped_release nogil;
        cpu::pointwise(kind, at(out), at(inp), n);
      },
      arg("function"), arg("out"), arg("inp"), arg("n"));
  m.def(
      "_op_pointwise_backward",
      [](const std::string& f, uintptr_t dinp, uintptr_t dout, uintptr_t at_, int64_t n) {
        const cpu::Pointwise kind = pointwise_of(f);
        pyb::gil_scoped_release nogil;
        cpu::pointwise_backward(kind, at(dinp), at(dout), at(at_), n);
      },
      arg("function"), arg("dinp"), arg("dout"), arg("at"), arg("n"));
}

}  // namespace sb::py
