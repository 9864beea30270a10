// What AdamW and Muon share (internal): per-tensor state buffers of owned tensors (backend
// memory), the ownership flags, the last step's statistics, and the loops of the backend's memory
// (optim_kernels.hpp). Contract: bookkeeping only; the arithmetic is in the kernels.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/optim_kernels.hpp"

namespace sb::optim_detail {

// Statistics of a tensor this optimizer did not update (unowned): every field NaN.
TensorUpdateStats not_computed();

// State buffers per tensor; only owned tensors hold them (backend memory, zero at allocation).
class TensorState {
 public:
  // kinds[i]: the names of tensor i's buffers ("momentum", "exp_avg", ...), in order; sizes[i][k]
  // the length of buffer k (empty `sizes`: every buffer has its tensor's numel).
  TensorState(const std::vector<ParamView>& params, Backend& backend, std::vector<std::vector<std::string>> kinds,
              std::vector<std::vector<size_t>> sizes = {});

  const std::vector<ParamView>& params() const { return params_; }
  Backend& backend() { return backend_; }
  OptimKernels& kernels() { return backend_.optim_kernels(); }
  bool owned(size_t tensor) const { return owned_[tensor]; }
  // Buffer k of an owned tensor: (numel).
  float* buffer(size_t tensor, size_t k) { return buffers_[tensor][k].data_as<float>(); }

  // Frees the state of tensors no longer owned, allocates (zeroed) the newly owned ones, keeps
  // the rest. Throws sb::Error when owned.size() is not the tensor count.
  void set_owned(const std::vector<bool>& owned);
  std::vector<StateBuffer> state();
  size_t bytes() const;
  std::vector<TensorUpdateStats>& stats() { return stats_; }
  const std::vector<TensorUpdateStats>& stats() const { return stats_; }

 private:
  std::vector<ParamView> params_;
  Backend& backend_;
  std::vector<std::vector<std::string>> kinds_;
  std::vector<std::vector<size_t>> sizes_;  // [tensor][kind] buffer lengths
  std::vector<bool> owned_;
  std::vector<std::vector<Tensor>> buffers_;  // [tensor][kind] (numel) f32, empty when unowned
  std::vector<TensorUpdateStats> stats_;      // (tensors), layout order
};

}  // namespace sb::optim_detail
