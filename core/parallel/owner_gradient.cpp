// OwnerGradient (parallel/owner_gradient.hpp): owner-side sums of the batch gradient, shared in one
// int64 SUM all-reduce. Determinism: every shared word is either integer ExactSum words (the
// owners' partial Σ g², added exactly in any order) or a value only its owner contributes (the
// others add 0), so every rank receives the owner's bits; the values themselves are computed
// from the owner's exact sums as a rank holding the whole gradient computes them.
#include "samebits/core/parallel/owner_gradient.hpp"

#include <cstring>
#include <utility>

#include "samebits/core/optim_kernels.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"

namespace sb {

OwnerGradient::OwnerGradient(std::vector<ParamView> layout, const Ownership& ownership, Backend& backend,
                             Communicator& comm)
    : layout_(std::move(layout)), backend_(backend), comm_(comm), need_(static_cast<size_t>(comm.size())) {
  SB_CHECK(ownership.owner.size() == layout_.size() && ownership.world() == comm.size(),
           "OwnerGradient: an ownership of ", ownership.owner.size(), " tensors over ", ownership.world(),
           " ranks for ", layout_.size(), " tensors over ", comm.size());
  for (size_t t = 0; t < layout_.size(); ++t) {
    const int r = ownership.owner[t];
    need_[size_t(r)].push_back({layout_[t].offset, layout_[t].numel});
    if (r == comm.rank()) mine_.push_back(t);
  }
  if (!mine_.empty()) sums_ = backend_.make_tensor_sums(need_[size_t(comm.rank())]);
}

SharedGradient OwnerGradient::share(const float* grad, bool fingerprints, bool statistics) {
  const size_t tensors = layout_.size(), kw = det::ExactSum::kWords;
  // Words: the partial Σ g² (kw), then per tensor its fingerprint (fingerprints), then its
  // norm | max bits, mean bits, Σ g² as fp64 bits (statistics). Zero where this rank is no owner.
  const size_t per_fp = fingerprints ? 1 : 0, per_stat = statistics ? 3 : 0;
  std::vector<int64_t> words(kw + tensors * (per_fp + per_stat), 0);
  det::ExactSum partial;
  if (!mine_.empty()) {
    const size_t m = mine_.size();
    std::vector<det::ExactSum> sq(m), sum(m);  // (mine)
    std::vector<float> max_abs(m);             // (mine)
    sums_->clear();
    sums_->add(grad, statistics);
    sums_->read(sq.data(), statistics ? sum.data() : nullptr, statistics ? max_abs.data() : nullptr);
    std::vector<uint64_t> fp(fingerprints ? m : 0);
    if (fingerprints) backend_.fingerprints(grad, need_[size_t(comm_.rank())], fp.data());
    for (size_t j = 0; j < m; ++j) {
      const size_t t = mine_[j];
      partial.merge(sq[j]);
      if (fingerprints) words[kw + t] = static_cast<int64_t>(fp[j]);
      if (!statistics) continue;
      const TensorBatchSums b = batch_sums(sq[j], sum[j], max_abs[j], layout_[t].numel);
      int64_t* w = words.data() + kw + tensors * per_fp + 3 * t;
      w[0] = static_cast<int64_t>((uint64_t{det::bits_of(b.norm)} << 32) | det::bits_of(b.max_abs));
      w[1] = static_cast<int64_t>(det::bits_of(b.mean));
      w[2] = static_cast<int64_t>(det::bits_of(b.sq));
    }
  }
  partial.to_words(words.data());
  comm_.allreduce_sum_i64(words.data(), words.size());

  SharedGradient out;
  out.squares = det::ExactSum::from_words(words.data());
  if (fingerprints) {
    out.fingerprints.resize(tensors);
    for (size_t t = 0; t < tensors; ++t) out.fingerprints[t] = static_cast<uint64_t>(words[kw + t]);
  }
  if (statistics) {
    out.tensors.resize(tensors);
    for (size_t t = 0; t < tensors; ++t) {
      const int64_t* w = words.data() + kw + tensors * per_fp + 3 * t;
      const auto nm = static_cast<uint64_t>(w[0]);
      TensorBatchSums& b = out.tensors[t];
      b.norm = det::float_of_bits(static_cast<uint32_t>(nm >> 32));
      b.max_abs = det::float_of_bits(static_cast<uint32_t>(nm));
      b.mean = det::float_of_bits(static_cast<uint32_t>(w[1]));
      b.sq = det::double_of_bits(static_cast<uint64_t>(w[2]));
    }
  }
  return out;
}

void OwnerGradient::scale_owned(float* grad, float factor) {
  OptimKernels& kernels = backend_.optim_kernels();
  for (size_t t : mine_) kernels.scale(grad + layout_[t].offset, layout_[t].numel, factor);
}

}  // namespace sb
