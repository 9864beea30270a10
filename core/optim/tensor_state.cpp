// Per-tensor optimizer state and update statistics shared by AdamW and Muon (tensor_state.hpp).
// Contract: allocation and ownership are bookkeeping only (state buffers in backend memory,
// zero-filled by the backend).
#include "tensor_state.hpp"

#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb::optim_detail {

TensorUpdateStats not_computed() {
  const float nan = det::float_of_bits(0x7fc00000u);
  return {nan, nan, nan};
}

TensorState::TensorState(const std::vector<ParamView>& params, Backend& backend,
                         std::vector<std::vector<std::string>> kinds, std::vector<std::vector<size_t>> sizes)
    : params_(params),
      backend_(backend),
      kinds_(std::move(kinds)),
      sizes_(std::move(sizes)),
      owned_(params.size(), false),
      buffers_(params.size()),
      stats_(params.size(), not_computed()) {
  SB_CHECK(kinds_.size() == params_.size(),
           "optimizer state: expected one list of state kinds per "
           "tensor (",
           params_.size(), "), got ", kinds_.size());
  if (sizes_.empty()) {
    for (size_t i = 0; i < params_.size(); ++i) sizes_.emplace_back(kinds_[i].size(), params_[i].numel);
  }
  SB_CHECK(sizes_.size() == params_.size(),
           "optimizer state: expected one list of buffer sizes per "
           "tensor (",
           params_.size(), "), got ", sizes_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    SB_CHECK(sizes_[i].size() == kinds_[i].size(), "optimizer state of ", params_[i].name, ": ", kinds_[i].size(),
             " kinds but ", sizes_[i].size(), " sizes");
  set_owned(std::vector<bool>(params_.size(), true));
}

void TensorState::set_owned(const std::vector<bool>& owned) {
  SB_CHECK(owned.size() == params_.size(), "Optimizer::set_owned: expected one flag per tensor (", params_.size(),
           "), got ", owned.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!owned[i]) {
      buffers_[i].clear();
      stats_[i] = not_computed();
    } else if (!owned_[i]) {
      buffers_[i].clear();
      for (size_t k = 0; k < kinds_[i].size(); ++k)
        buffers_[i].push_back(backend_.alloc(DType::f32, {static_cast<int64_t>(sizes_[i][k])}));
    }
    owned_[i] = owned[i];
  }
}

std::vector<StateBuffer> TensorState::state() {
  std::vector<StateBuffer> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t k = 0; k < buffers_[i].size(); ++k)
      out.push_back({params_[i].name + "/" + kinds_[i][k], buffers_[i][k].data_as<float>(), sizes_[i][k]});
  }
  return out;
}

size_t TensorState::bytes() const {
  size_t total = 0;
  for (const auto& tensor : buffers_)
    for (const Tensor& b : tensor) total += b.bytes();
  return total;
}

}  // namespace sb::optim_detail
