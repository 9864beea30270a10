// samebits.torch.Muon's native half (python/samebits/torch/muon.py): one C++ Muon
// (core/optim/muon.hpp) per parameter group, built once over the group's matrices and reused every
// step, on the CPU backend (host memory) or a CUDA backend (a CUDA tensor's device memory; CUDA
// builds). The same kernels, canonical chains and exact norm as the C++ optimizer under the same
// options, so the same bits on any thread count, CPU or GPU; each matrix's update depends on that
// matrix's weights, gradient and momentum only.
#include <pybind11/stl.h>

#include <memory>
#include <string>
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

// The hyper-parameters of a group's Muon, as samebits.torch.Muon's group holds them (lr and
// momentum are per step: StepContext).
struct MuonArgs {
  double weight_decay = 0.1, eps = 1e-7, extra_scale = 1.0;
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

// The Muon of one parameter group: its matrices laid out in a flat weight and gradient buffer of
// the backend (one ParamView each, kParamAlign-aligned), the C++ Muon over that layout and its
// state. The caller's tensors stay the source of truth: every step copies each updated matrix's
// weights, gradient and momentum in, steps, and copies the weights and momentum back, so a
// momentum buffer set or loaded from Python between steps is the one used.
class MuonGroup {
 public:
  // shapes: the group's (rows, cols), in its order; device: -1 for the CPU, else the GPU.
  MuonGroup(const std::vector<std::pair<int64_t, int64_t>>& shapes, const MuonArgs& args, int device)
      : backend_(torch_backend(device)), device_(device) {
    size_t offset = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto [rows, cols] = shapes[i];
      SB_CHECK(rows > 0 && cols > 0, "samebits.torch.Muon: expected a non-empty matrix, got (", rows, ", ", cols, ")");
      const size_t numel = size_t(rows * cols);
      params_.push_back(
          {std::string("m").append(std::to_string(i)), {rows, cols}, offset, numel, ParamKind::matrix, 0.0f, 0.0f});
      offset += (numel + kParamAlign - 1) / kParamAlign * kParamAlign;
    }
    weights_ = backend_->alloc(DType::f32, {int64_t(offset)});
    grads_ = backend_->alloc(DType::f32, {int64_t(offset)});
    opt_ = std::make_unique<Muon>(params_, *backend_, Precision::fp32, muon_options(args));
    owned_.assign(params_.size(), true);
  }

  // One step over the matrices whose `present` flag is set (the others, without a gradient, keep
  // their weights and momentum): w ← Muon's update from g, m updated. Pointers to (rows, cols)
  // fp32 memory of this group's device, in the group's order; returns when the update is done.
  void step(const std::vector<uintptr_t>& w, const std::vector<uintptr_t>& g, const std::vector<uintptr_t>& m,
            const std::vector<bool>& present, double lr, double momentum) {
    const size_t n = params_.size();
    SB_CHECK(w.size() == n && g.size() == n && m.size() == n && present.size() == n,
             "samebits.torch.Muon: the group was built with ", n, " matrices, the step passed ", w.size());
    pyb::gil_scoped_release nogil;
#ifdef SB_HAVE_CUDA
    int current = -1;
    if (device_ >= 0) SB_CUDA_CHECK(cudaGetDevice(&current));
#endif
    if (present != owned_) {
      opt_->set_owned(present);
      owned_ = present;
    }
    const std::vector<StateBuffer> state = opt_->state();  // the owned matrices' momentum, in order
    float* const weights = weights_.data_as<float>();
    float* const grads = grads_.data_as<float>();
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!present[i]) continue;
      const size_t bytes = params_[i].numel * sizeof(float);
      backend_->copy(weights + params_[i].offset, reinterpret_cast<const float*>(w[i]), bytes);
      backend_->copy(grads + params_[i].offset, reinterpret_cast<const float*>(g[i]), bytes);
      backend_->copy(state[k++].data, reinterpret_cast<const float*>(m[i]), bytes);
    }
    StepContext ctx;
    ctx.lr_factor = lr;
    ctx.muon_momentum = momentum;
    ctx.compute_stats = false;
    opt_->step(weights, grads, ctx);
    k = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!present[i]) continue;
      const size_t bytes = params_[i].numel * sizeof(float);
      backend_->copy(reinterpret_cast<float*>(w[i]), weights + params_[i].offset, bytes);
      backend_->copy(reinterpret_cast<float*>(m[i]), state[k++].data, bytes);
    }
    backend_->synchronize();
#ifdef SB_HAVE_CUDA
    if (device_ >= 0) SB_CUDA_CHECK(cudaSetDevice(current));
#endif
  }

 private:
  std::shared_ptr<Backend> backend_;  // outlives the tensors and the optimizer below
  int device_;
  std::vector<ParamView> params_;
  Tensor weights_, grads_;  // (Σ aligned numel) fp32, backend memory
  std::unique_ptr<Muon> opt_;
  std::vector<bool> owned_;  // the matrices the optimizer holds state for (the last step's)
};

}  // namespace

std::shared_ptr<Backend> torch_backend(int device) {
  if (device < 0) {
    static const std::shared_ptr<Backend> host = make_cpu_backend();
    return host;
  }
#ifdef SB_HAVE_CUDA
  static std::map<int, std::shared_ptr<Backend>> backends;  // one per GPU, kept (guarded by the GIL)
  std::shared_ptr<Backend>& backend = backends[device];
  if (!backend) backend = make_cuda_backend(Numerics::deterministic(), device);
  return backend;
#else
  SB_FAIL("samebits.torch: a tensor on GPU ", device, ", but this samebits package was built without CUDA");
#endif
}

void bind_torch_muon(pyb::module_& m) {
  pyb::class_<MuonArgs>(m, "_MuonArgs", "The hyper-parameters of a samebits.torch.Muon parameter group.")
      .def(pyb::init<>())
      .def_readwrite("weight_decay", &MuonArgs::weight_decay)
      .def_readwrite("eps", &MuonArgs::eps)
      .def_readwrite("extra_scale", &MuonArgs::extra_scale)
      .def_readwrite("nesterov", &MuonArgs::nesterov)
      .def_readwrite("momentum_form", &MuonArgs::momentum_form)
      .def_readwrite("scale", &MuonArgs::scale)
      .def_readwrite("ns_table", &MuonArgs::ns_table)
      .def_readwrite("ns_steps", &MuonArgs::ns_steps)
      .def_readwrite("ns_coefficients", &MuonArgs::ns_coefficients);
  pyb::class_<MuonGroup>(m, "_MuonGroup",
                         "The C++ Muon of one samebits.torch.Muon parameter group, built once and reused.")
      .def(pyb::init<const std::vector<std::pair<int64_t, int64_t>>&, const MuonArgs&, int>(), pyb::arg("shapes"),
           pyb::arg("args"), pyb::arg("device"))
      .def("step", &MuonGroup::step, pyb::arg("weights"), pyb::arg("grads"), pyb::arg("momenta"), pyb::arg("present"),
           pyb::arg("lr"), pyb::arg("momentum"),
           "Muon's update in place of the present matrices (data_ptr values of contiguous fp32 tensors on the "
           "group's device); their momentum updated. Returns when the update is complete.");
#ifdef SB_HAVE_CUDA
  m.attr("_built_with_cuda") = true;
#else
  m.attr("_built_with_cuda") = false;
#endif
}

}  // namespace sb::py
