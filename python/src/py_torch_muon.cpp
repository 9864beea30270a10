// samebits.torch.Muon's update of one matrix (python/samebits/torch/muon.py): the C++ Muon
// (core/optim/muon.hpp) over the caller's memory — host memory on the CPU backend, a CUDA tensor's
// device memory on the CUDA backend (CUDA builds) — the same kernels, canonical chains and exact
// norm, so the same bits on any thread count, CPU or GPU as the C++ optimizer under the same options.
#include <pybind11/stl.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bindings.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/enum_names.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/det/error.hpp"

#ifdef SB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <map>

#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#endif

namespace sb::py {
namespace {

using Matrix = pyb::array_t<float, pyb::array::c_style>;

// The hyper-parameters of one update, as samebits.torch.Muon's group holds them.
struct MuonArgs {
  double lr = 1e-3, weight_decay = 0.1, momentum = 0.95, eps = 1e-7, extra_scale = 1.0;
  bool nesterov = true;
  std::string momentum_form = "lerp", scale = "shape", ns_table = "custom";
  int64_t ns_steps = 5;
  std::vector<double> ns_coefficients{3.4445, -4.775, 2.0315};
};

template <class E>
E named(const std::string& key, const std::string& text) {
  const std::optional<E> e = config_enum<E>(text);
  if (e) return *e;
  std::string names;
  for (std::string_view n : EnumNames<E>::names) names += (names.empty() ? "" : ", ") + std::string(n);
  SB_FAIL("samebits.torch.Muon: ", key, "='", text, "' is not one of ", names);
}

MuonOptions muon_options(const MuonArgs& a) {
  OptimConfig c;
  c.ns_steps = a.ns_steps;
  c.ns_coefficients = named<NsCoefficients>("ns_table", a.ns_table);
  c.ns_custom = a.ns_coefficients;
  MuonOptions o;
  o.lr = 1.0;  // the step's lr is StepContext::lr_factor: scheduled_lr(1, lr) = lr exactly
  o.weight_decay = a.weight_decay;
  o.nesterov = a.nesterov;
  o.momentum_form = named<MomentumForm>("momentum_form", a.momentum_form);
  o.ns = ns_schedule(c);
  o.ns_eps = a.eps;
  o.scale = named<MuonScale>("scale", a.scale);
  o.extra_scale = a.extra_scale;
  return o;
}

// w ← Muon's update from g; m (the matrix's momentum buffer) updated. All (rows, cols) fp32 in
// `backend`'s memory; returns when the backend's work is done.
void update_in(Backend& backend, float* w, const float* g, float* m, int64_t rows, int64_t cols, const MuonArgs& args) {
  const size_t numel = size_t(rows * cols);
  const ParamView p{"matrix", {rows, cols}, 0, numel, ParamKind::matrix, 0.0f, 0.0f};
  const MuonOptions options = muon_options(args);
  Muon opt({p}, backend, Precision::fp32, options);
  const StateBuffer state = opt.state().at(0);
  backend.copy(state.data, m, numel * sizeof(float));
  StepContext ctx;
  ctx.lr_factor = args.lr;
  ctx.muon_momentum = args.momentum;
  ctx.compute_stats = false;
  opt.step(w, g, ctx);
  backend.copy(m, state.data, numel * sizeof(float));
  backend.synchronize();
}

// weight ← Muon's update from grad; momentum (the matrix's buffer) updated. All (rows, cols) fp32.
void muon_update(Matrix weight, const Matrix& grad, Matrix momentum, const MuonArgs& args) {
  SB_CHECK(weight.ndim() == 2, "samebits.torch.Muon: expected a 2-D parameter, got ", weight.ndim(), " dimensions");
  const int64_t rows = weight.shape(0), cols = weight.shape(1);
  for (const Matrix* m : std::initializer_list<const Matrix*>{&grad, &momentum})
    SB_CHECK(m->ndim() == 2 && m->shape(0) == rows && m->shape(1) == cols,
             "samebits.torch.Muon: gradient or momentum buffer is not of the parameter's shape (", rows, ", ", cols,
             ")");
  float* const w = weight.mutable_data();
  float* const m = momentum.mutable_data();
  const float* const g = grad.data();
  pyb::gil_scoped_release nogil;
  static const std::unique_ptr<Backend> host = make_cpu_backend();
  update_in(*host, w, g, m, rows, cols, args);
}

#ifdef SB_HAVE_CUDA
// The same update over device memory of GPU `device` (torch's data_ptr of contiguous fp32 (rows,
// cols) tensors), on a deterministic CUDA backend of that device (one per device, kept). The caller
// has finished its writes to the three tensors (samebits.torch.Muon synchronizes torch's stream);
// this returns after the update is complete, with the caller's current device as it was.
void muon_update_cuda(uintptr_t weight, uintptr_t grad, uintptr_t momentum, int64_t rows, int64_t cols, int device,
                      const MuonArgs& args) {
  SB_CHECK(rows > 0 && cols > 0, "samebits.torch.Muon: expected a non-empty matrix, got (", rows, ", ", cols, ")");
  static std::map<int, std::unique_ptr<Backend>> backends;  // guarded by the GIL
  std::unique_ptr<Backend>& backend = backends[device];
  if (!backend) backend = make_cuda_backend(Numerics::deterministic(), device);
  Backend& be = *backend;
  pyb::gil_scoped_release nogil;
  int current = -1;
  SB_CUDA_CHECK(cudaGetDevice(&current));
  update_in(be, reinterpret_cast<float*>(weight), reinterpret_cast<const float*>(grad),
            reinterpret_cast<float*>(momentum), rows, cols, args);
  SB_CUDA_CHECK(cudaSetDevice(current));
}
#endif

}  // namespace

void bind_torch_muon(pyb::module_& m) {
  pyb::class_<MuonArgs>(m, "_MuonArgs", "The hyper-parameters of samebits.torch.Muon's update of one matrix.")
      .def(pyb::init<>())
      .def_readwrite("lr", &MuonArgs::lr)
      .def_readwrite("weight_decay", &MuonArgs::weight_decay)
      .def_readwrite("momentum", &MuonArgs::momentum)
      .def_readwrite("eps", &MuonArgs::eps)
      .def_readwrite("extra_scale", &MuonArgs::extra_scale)
      .def_readwrite("nesterov", &MuonArgs::nesterov)
      .def_readwrite("momentum_form", &MuonArgs::momentum_form)
      .def_readwrite("scale", &MuonArgs::scale)
      .def_readwrite("ns_table", &MuonArgs::ns_table)
      .def_readwrite("ns_steps", &MuonArgs::ns_steps)
      .def_readwrite("ns_coefficients", &MuonArgs::ns_coefficients);
  m.def("_muon_update", &muon_update, pyb::arg("weight").noconvert(), pyb::arg("grad"),
        pyb::arg("momentum").noconvert(), pyb::arg("args"),
        "Muon's update of one fp32 matrix in place (the C++ Muon over this memory); momentum updated.");
#ifdef SB_HAVE_CUDA
  m.attr("_built_with_cuda") = true;
  m.def("_muon_update_cuda", &muon_update_cuda, pyb::arg("weight"), pyb::arg("grad"), pyb::arg("momentum"),
        pyb::arg("rows"), pyb::arg("cols"), pyb::arg("device"), pyb::arg("args"),
        "Muon's update of one fp32 matrix in device memory of GPU `device` (data_ptr values), in place; "
        "momentum updated. Returns when the update is complete.");
#else
  m.attr("_built_with_cuda") = false;
#endif
}

}  // namespace sb::py
