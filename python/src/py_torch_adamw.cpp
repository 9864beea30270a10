// samebits.torch.AdamW's and samebits.torch.clip_grad_norm_'s native half (python/samebits/torch):
// in place on torch's memory (host, or a CUDA tensor's device memory in CUDA builds), through the
// backend's optimizer kernels. AdamW: per tensor, the C++ AdamW's constants (adamw_constants) and
// its elementwise ops::adamw_update, as AdamW::step runs them; clipping: the trainer's exact ‖G‖
// (an exact sum of squares, rounded once), clip_factor and one fp32 multiply per element. So the
// C++ trainer's bits on any thread count, CPU or GPU.
#include <pybind11/stl.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/adamw.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/det/error.hpp"

#ifdef SB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "samebits/core/cuda/check.hpp"
#endif

namespace sb::py {
namespace {

// Keeps the current CUDA device across a call that runs on GPU backends (CUDA builds).
class DeviceGuard {
 public:
  explicit DeviceGuard(const std::vector<int>& devices) {
#ifdef SB_HAVE_CUDA
    for (int d : devices) active_ = active_ || d >= 0;
    if (active_) SB_CUDA_CHECK(cudaGetDevice(&current_));
#else
    (void)devices;
#endif
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
#ifdef SB_HAVE_CUDA
    if (active_) cudaSetDevice(current_);
#endif
  }

 private:
  bool active_ = false;
  int current_ = -1;
};

// The backends of `devices`, fetched with the GIL held.
std::vector<std::shared_ptr<Backend>> backends_of(const std::vector<int>& devices) {
  std::vector<std::shared_ptr<Backend>> out;
  out.reserve(devices.size());
  for (int d : devices) out.push_back(torch_backend(d));
  return out;
}

// One AdamW step of a parameter group's tensors that have a gradient, in place: for tensor i,
// adamw_constants({lr = 1, weight_decay, betas, eps}, lr, steps[i], decay = true) and
// ops::adamw_update on each of its numel[i] elements (w, m, v updated; g read). The decay factor is
// fl32(1 − lr·wd): exactly 1 for weight_decay = 0, as the C++ AdamW's undecayed tensors. steps[i]
// counts the tensor's updates including this one (≥ 1). Pointers are contiguous fp32 memory of
// devices[i] (-1: host); returns when every update is complete.
void adamw_step(const std::vector<uintptr_t>& w, const std::vector<uintptr_t>& g, const std::vector<uintptr_t>& m,
                const std::vector<uintptr_t>& v, const std::vector<size_t>& numel, const std::vector<int64_t>& steps,
                const std::vector<int>& devices, double lr, std::pair<double, double> betas, double eps,
                double weight_decay) {
  const size_t n = w.size();
  SB_CHECK(
      g.size() == n && m.size() == n && v.size() == n && numel.size() == n && steps.size() == n && devices.size() == n,
      "samebits.torch.AdamW: expected one weight, gradient, exp_avg, exp_avg_sq, size, step and device per "
      "tensor");
  const AdamWOptions options{1.0, weight_decay, {betas.first, betas.second}, eps};  // lr: scheduled_lr(1, lr) = lr
  const std::vector<std::shared_ptr<Backend>> backends = backends_of(devices);
  pyb::gil_scoped_release nogil;
  const DeviceGuard guard(devices);
  for (size_t i = 0; i < n; ++i) {
    const ops::AdamWConstants k = adamw_constants(options, lr, steps[i], true);
    backends[i]->optim_kernels().adamw(reinterpret_cast<float*>(w[i]), reinterpret_cast<const float*>(g[i]),
                                       reinterpret_cast<float*>(m[i]), reinterpret_cast<float*>(v[i]), numel[i], k,
                                       nullptr);
  }
  for (const std::shared_ptr<Backend>& b : backends) b->synchronize();
}

// The trainer's global-norm clipping over tensors on any devices: ‖G‖ = sqrt_rounded(Σ exact sums
// of squares) (the sums merged exactly: the tensors' order and devices do not matter),
// factor = clip_factor(‖G‖, max_norm), and g ← fl32(g·factor) on every element when factor < 1.
// Returns (‖G‖, factor) when every multiply is complete.
std::pair<float, float> clip_grad_norm(const std::vector<uintptr_t>& g, const std::vector<size_t>& numel,
                                       const std::vector<int>& devices, double max_norm) {
  const size_t n = g.size();
  SB_CHECK(numel.size() == n && devices.size() == n,
           "samebits.torch.clip_grad_norm_: expected one gradient, size and device per tensor");
  const std::vector<std::shared_ptr<Backend>> backends = backends_of(devices);
  pyb::gil_scoped_release nogil;
  const DeviceGuard guard(devices);
  det::ExactSum squares;
  for (size_t i = 0; i < n; ++i)
    squares.merge(backends[i]->optim_kernels().sum_of_squares(reinterpret_cast<const float*>(g[i]), numel[i]));
  const float norm = sqrt_rounded(squares);
  const float factor = clip_factor(norm, max_norm);
  if (factor < 1.0f) {
    for (size_t i = 0; i < n; ++i) backends[i]->optim_kernels().scale(reinterpret_cast<float*>(g[i]), numel[i], factor);
    for (const std::shared_ptr<Backend>& b : backends) b->synchronize();
  }
  return {norm, factor};
}

}  // namespace

void bind_torch_adamw(pyb::module_& m) {
  m.def("_adamw_step", &adamw_step, pyb::arg("weights"), pyb::arg("grads"), pyb::arg("exp_avgs"),
        pyb::arg("exp_avg_sqs"), pyb::arg("numels"), pyb::arg("steps"), pyb::arg("devices"), pyb::arg("lr"),
        pyb::arg("betas"), pyb::arg("eps"), pyb::arg("weight_decay"),
        "The C++ AdamW's update in place of each tensor (data_ptr values of contiguous fp32 tensors; device -1: "
        "the CPU), with its own step count. Returns when the update is complete.");
  m.def("_clip_grad_norm", &clip_grad_norm, pyb::arg("grads"), pyb::arg("numels"), pyb::arg("devices"),
        pyb::arg("max_norm"),
        "The trainer's clipping over the gradients (data_ptr values of contiguous fp32 tensors): the exact global "
        "norm and the factor applied, (norm, factor).");
}

}  // namespace sb::py
