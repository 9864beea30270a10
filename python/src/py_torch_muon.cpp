// samebits.torch.Muon's update of one matrix (python/samebits/torch/muon.py): the C++ Muon
// (core/optim/muon.hpp) over the caller's memory — the same kernels, canonical chains and exact
// norm, so the same bits on any thread count and CPU as the C++ optimizer under the same options.
#include <pybind11/stl.h>

#include <cstring>
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

Backend& host_backend() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend();
  return *backend;
}

// weight ← Muon's update from grad; momentum (the matrix's buffer) updated. All (rows, cols) fp32.
void muon_update(Matrix weight, const Matrix& grad, Matrix momentum, const MuonArgs& args) {
  SB_CHECK(weight.ndim() == 2, "samebits.torch.Muon: expected a 2-D parameter, got ", weight.ndim(), " dimensions");
  const int64_t rows = weight.shape(0), cols = weight.shape(1);
  for (const Matrix* m : std::initializer_list<const Matrix*>{&grad, &momentum})
    SB_CHECK(m->ndim() == 2 && m->shape(0) == rows && m->shape(1) == cols,
             "samebits.torch.Muon: gradient or momentum buffer is not of the parameter's shape (", rows, ", ", cols,
             ")");
  const size_t numel = size_t(rows * cols);
  const ParamView p{"matrix", {rows, cols}, 0, numel, ParamKind::matrix, 0.0f, 0.0f};
  float* const w = weight.mutable_data();
  float* const m = momentum.mutable_data();
  const float* const g = grad.data();
  const MuonOptions options = muon_options(args);
  pyb::gil_scoped_release nogil;
  Muon opt({p}, host_backend(), Precision::fp32, options);
  const StateBuffer state = opt.state().at(0);
  std::memcpy(state.data, m, numel * sizeof(float));
  StepContext ctx;
  ctx.lr_factor = args.lr;
  ctx.muon_momentum = args.momentum;
  ctx.compute_stats = false;
  opt.step(w, g, ctx);
  std::memcpy(m, state.data, numel * sizeof(float));
}

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
}

}  // namespace sb::py
