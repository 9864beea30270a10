// samebits.torch.deterministic's native half (python/samebits/torch/deterministic.py): the kernels
// its ATen table runs on a tensor's memory (data_ptr) — the backend's GEMM (canonical or exact),
// LayerNorm, embedding gradient and fused cross-entropy, and the loops of
// samebits/core/cpu/host_ops.hpp — with the GIL released. `device` -1: host memory on the CPU
// backend; a GPU's index (CUDA builds): that GPU's memory on its CUDA backend (the device forms of
// samebits/core/cuda/device_ops.hpp), synchronized before returning. Shapes and strides are checked
// on the Python side, which owns the memory and orders torch's stream before the call.
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cpu/host_ops.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/ops/layernorm.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"

#ifdef SB_HAVE_CUDA
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/cuda/device_ops.hpp"
#endif

namespace sb::py {
namespace {

template <class T = float>
T* at(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

// "canonical", "exact", or "pairs" (canonical with numerics.bf16_dot = pairs: bf16 products in the
// bf16 dot instructions' pair order).
Numerics numerics_of(const std::string& mode) {
  Numerics n = Numerics::deterministic();
  if (mode == "exact") {
    n.gemm = GemmMode::exact;
  } else if (mode == "pairs") {
    n.bf16_dot = Bf16Dot::pairs;
  } else {
    SB_CHECK(mode == "canonical", "samebits.torch.deterministic: gemm must be 'canonical', 'exact' or 'pairs', got '",
             mode, "'");
  }
  return n;
}

// The backend of `device` in GEMM `mode` (numerics_of), kept (guarded by the GIL).
Backend& backend_for(const std::string& mode, int device) {
  static std::map<std::pair<std::string, int>, std::shared_ptr<Backend>> backends;
  std::shared_ptr<Backend>& b = backends[{mode, device}];
  if (!b) {
    const Numerics n = numerics_of(mode);
    if (device < 0 || mode == "canonical") {
      b = device < 0 ? std::shared_ptr<Backend>(make_cpu_backend(n)) : torch_backend(device);
    } else {
#ifdef SB_HAVE_CUDA
      b = make_cuda_backend(n, device);
#else
      SB_FAIL("samebits.torch: a tensor on GPU ", device, ", but this samebits package was built without CUDA");
#endif
    }
  }
  return *b;
}

// Runs `host` on the CPU or `gpu` on the device's backend (then waits for it), without the GIL.
template <class Host, class Gpu>
void run_on(int device, Host host, Gpu gpu) {
  Backend& be = backend_for("canonical", device);
  pyb::gil_scoped_release nogil;
  if (device < 0) {
    host(be);
    return;
  }
#ifdef SB_HAVE_CUDA
  gpu(be);
  be.synchronize();
#else
  (void)gpu;
#endif
}

// C[b] (m, n; ldc) ← op(A[b])·op(B[b]) (+ C[b] when accumulate) for b < batch, the operands
// batch_a, batch_b, batch_c elements apart: Backend::gemm's product per batch entry, its operands
// in `precision` ("fp32"; "bf16" for bf16 values widened to fp32, which the pair order takes).
void gemm(const std::string& mode, bool ta, bool tb, int m, int n, int k, uintptr_t a, int lda, uintptr_t b, int ldb,
          uintptr_t c, int ldc, bool accumulate, int batch, int64_t batch_a, int64_t batch_b, int64_t batch_c,
          int device, const std::string& precision) {
  SB_CHECK(precision == "fp32" || precision == "bf16", "samebits.torch: GEMM precision fp32 or bf16, got '", precision,
           "'");
  const Precision p = precision == "bf16" ? Precision::bf16 : Precision::fp32;
  Backend& backend = backend_for(mode, device);
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
                       accumulate,
                       p};
    backend.gemm(g);
  }
  if (device >= 0) backend.synchronize();
}

// The exact sum of n fp32 values over `count`, rounded once: the trainer's mean loss (rule 5).
float exact_mean(uintptr_t values, int64_t n, int64_t count) {
  det::ExactSum sum;
  sum.add(at<const float>(values), static_cast<size_t>(n));
  return mean_loss(sum, count);
}

ops::Pointwise pointwise_of(const std::string& name) {
  using P = ops::Pointwise;
  static const std::map<std::string, P> names{{"exp", P::exp},           {"log", P::log},
                                              {"tanh", P::tanh},         {"sigmoid", P::sigmoid},
                                              {"silu", P::silu},         {"gelu_tanh", P::gelu_tanh},
                                              {"gelu_erf", P::gelu_erf}, {"sin", P::sin},
                                              {"cos", P::cos},           {"erf", P::erf}};
  const auto it = names.find(name);
  SB_CHECK(it != names.end(), "samebits.torch.deterministic: no pointwise function '", name, "'");
  return it->second;
}

ops::Reduction reduction_of(const std::string& name) {
  using R = ops::Reduction;
  static const std::map<std::string, R> names{
      {"sum", R::sum}, {"sumsq", R::sumsq}, {"abssum", R::abssum}, {"max", R::max}, {"absmax", R::absmax}};
  const auto it = names.find(name);
  SB_CHECK(it != names.end(), "samebits.torch.deterministic: no reduction '", name, "'");
  return it->second;
}

void bind_kernels(pyb::module_& m) {
  using pyb::arg;
  m.def(
      "_op_layernorm_forward",
      [](uintptr_t out, uintptr_t mean, uintptr_t rstd, uintptr_t inp, uintptr_t w, uintptr_t b, int N, int C,
         float eps, int device) {
        float* bias = b ? at(b) : nullptr;
        run_on(
            device,
            [&](Backend&) {
              cpu::layernorm_rows(at(out), at(mean), at(rstd), at(inp), at(w), bias, N, C, ReduceMode::canonical, eps);
            },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::layernorm_rows(be, at(out), at(mean), at(rstd), at(inp), at(w), bias, N, C, eps);
#endif
            });
      },
      arg("out"), arg("mean"), arg("rstd"), arg("inp"), arg("w"), arg("b"), arg("N"), arg("C"), arg("eps"),
      arg("device") = -1, "LayerNorm rows with eps (b 0: no bias).");
  m.def(
      "_op_softmax",
      [](uintptr_t out, uintptr_t inp, int64_t rows, int64_t cols, bool log, int device) {
        run_on(
            device, [&](Backend&) { cpu::softmax_rows(at(out), at(inp), rows, cols, log); },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::softmax_rows(be, at(out), at(inp), rows, cols, log);
#endif
            });
      },
      arg("out"), arg("inp"), arg("rows"), arg("cols"), arg("log"), arg("device") = -1);
  m.def(
      "_op_softmax_backward",
      [](uintptr_t dinp, uintptr_t dout, uintptr_t out, int64_t rows, int64_t cols, bool log, int device) {
        run_on(
            device, [&](Backend&) { cpu::softmax_rows_backward(at(dinp), at(dout), at(out), rows, cols, log); },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::softmax_rows_backward(be, at(dinp), at(dout), at(out), rows, cols, log);
#endif
            });
      },
      arg("dinp"), arg("dout"), arg("out"), arg("rows"), arg("cols"), arg("log"), arg("device") = -1);
  m.def(
      "_op_reduce",
      [](const std::string& r, uintptr_t out, uintptr_t inp, int64_t outer, int64_t K, int64_t inner, int device) {
        const ops::Reduction kind = reduction_of(r);
        run_on(
            device, [&](Backend&) { cpu::reduce_middle(kind, at(out), at(inp), outer, K, inner); },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::reduce_middle(be, kind, at(out), at(inp), outer, K, inner);
#endif
            });
      },
      arg("reduction"), arg("out"), arg("inp"), arg("outer"), arg("K"), arg("inner"), arg("device") = -1);
  m.def(
      "_op_pointwise",
      [](const std::string& f, uintptr_t out, uintptr_t inp, int64_t n, int device) {
        const ops::Pointwise kind = pointwise_of(f);
        run_on(
            device, [&](Backend&) { cpu::pointwise(kind, at(out), at(inp), n); },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::pointwise(be, kind, at(out), at(inp), n);
#endif
            });
      },
      arg("function"), arg("out"), arg("inp"), arg("n"), arg("device") = -1);
  m.def(
      "_op_pointwise_backward",
      [](const std::string& f, uintptr_t dinp, uintptr_t dout, uintptr_t at_, int64_t n, int device) {
        const ops::Pointwise kind = pointwise_of(f);
        run_on(
            device, [&](Backend&) { cpu::pointwise_backward(kind, at(dinp), at(dout), at(at_), n); },
            [&]([[maybe_unused]] Backend& be) {
#ifdef SB_HAVE_CUDA
              cuda::pointwise_backward(be, kind, at(dinp), at(dout), at(at_), n);
#endif
            });
      },
      arg("function"), arg("dinp"), arg("dout"), arg("at"), arg("n"), arg("device") = -1);
}

}  // namespace

void bind_torch_ops(pyb::module_& m) {
  using pyb::arg;
  m.def("_op_gemm", &gemm, arg("mode"), arg("ta"), arg("tb"), arg("m"), arg("n"), arg("k"), arg("a"), arg("lda"),
        arg("b"), arg("ldb"), arg("c"), arg("ldc"), arg("accumulate"), arg("batch"), arg("batch_a"), arg("batch_b"),
        arg("batch_c"), arg("device") = -1, arg("precision") = "fp32",
        "Backend::gemm of `device`'s backend in `mode` per batch entry.");
  // The backend's own ops (the same entry on either device).
  m.def(
      "_op_layernorm_backward",
      [](uintptr_t dinp, uintptr_t dw, uintptr_t db, uintptr_t dout, uintptr_t inp, uintptr_t w, uintptr_t mean,
         uintptr_t rstd, int N, int C, int device) {
        const auto op = [&](Backend& be) {
          be.layernorm_backward(at(dinp), at(dw), db ? at(db) : nullptr, at(dout), at(inp), at(w), at(mean), at(rstd),
                                N, C);
        };
        run_on(device, op, op);
      },
      arg("dinp"), arg("dw"), arg("db"), arg("dout"), arg("inp"), arg("w"), arg("mean"), arg("rstd"), arg("N"),
      arg("C"), arg("device") = -1, "Backend::layernorm_backward (db 0: none).");
  m.def(
      "_op_embedding_backward",
      [](uintptr_t dw, uintptr_t dout, uintptr_t tokens, int n, int C, int V, int device) {
        const auto op = [&](Backend& be) {
          be.embedding_backward(at(dw), nullptr, at(dout), at<const int32_t>(tokens), 1, n, C, V, VocabRows{0, V});
        };
        run_on(device, op, op);
      },
      arg("dw"), arg("dout"), arg("tokens"), arg("n"), arg("C"), arg("V"), arg("device") = -1,
      "dw[tokens[i]] += dout[i], i ascending (int32 tokens).");
  m.def(
      "_op_xent_forward",
      [](uintptr_t losses, uintptr_t stats, uintptr_t logits, uintptr_t targets, int N, int V) {
        const auto op = [&](Backend& be) {
          be.softmax_xent_forward(at(losses), at(stats), at(logits), at<const int32_t>(targets), N, V);
        };
        run_on(-1, op, op);
      },
      arg("losses"), arg("stats"), arg("logits"), arg("targets"), arg("N"), arg("V"),
      "The trainer's fused softmax cross-entropy: per-row losses and (max, denominator) stats.");
  m.def(
      "_op_xent_backward",
      [](uintptr_t dlogits, uintptr_t logits, uintptr_t stats, uintptr_t targets, int N, int V, float loss_scale) {
        const auto op = [&](Backend& be) {
          be.softmax_xent_backward(at(dlogits), at(logits), at(stats), at<const int32_t>(targets), N, V, loss_scale);
        };
        run_on(-1, op, op);
      },
      arg("dlogits"), arg("logits"), arg("stats"), arg("targets"), arg("N"), arg("V"), arg("loss_scale"),
      "dlogits = ((softmax − onehot)/N)·loss_scale.");
  m.def("_exact_mean", &exact_mean, arg("values"), arg("n"), arg("count"),
        "fl32(exact Σ of n fp32 values / count): the trainer's mean loss.");
  bind_kernels(m);
}

}  // namespace sb::py
