// PartitionedPlan (plan_partitioned.hpp): the parts' plans joined over the `parts` communicator.
// Determinism: values move as bits; per-tensor words are summed as integers, each tensor's from its
// owner only; nothing here rounds a float.
#include "plan_partitioned.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "byte_stream.hpp"
#include "samebits/core/byte_codec.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "stage_parts.hpp"

namespace sb {
namespace {

// Per tensor of the whole model, `per` words from the part that counts it (the others add zeros):
// every rank of `parts` gets every tensor's. local: (part tensors, per).
std::vector<uint64_t> from_owners(Communicator& parts, const std::vector<uint64_t>& local, size_t per,
                                  const std::vector<size_t>& slot, const std::vector<bool>& counted, size_t tensors) {
  std::vector<uint64_t> full(tensors * per, 0);
  for (size_t i = 0; i < slot.size(); ++i)
    if (counted[i]) std::copy_n(local.begin() + ptrdiff_t(i * per), per, full.begin() + ptrdiff_t(slot[i] * per));
  parts.allreduce_sum_u64(full.data(), full.size());
  return full;
}

uint64_t pair_bits(float a, float b) { return uint64_t{det::bits_of(a)} << 32 | det::bits_of(b); }
float high_float(uint64_t w) { return det::float_of_bits(static_cast<uint32_t>(w >> 32)); }
float low_float(uint64_t w) { return det::float_of_bits(static_cast<uint32_t>(w)); }

// The part's optimizer, whose update statistics are the whole model's (from the owners).
class PartOptimizer final : public Optimizer {
 public:
  PartOptimizer(std::unique_ptr<Optimizer> inner, Communicator& parts, const std::vector<size_t>& slot,
                const std::vector<bool>& counted, size_t tensors)
      : inner_(std::move(inner)), parts_(parts), slot_(slot), counted_(counted), tensors_(tensors) {}
  void step(float* weights, const float* grads, const StepContext& ctx) override {
    inner_->step(weights, grads, ctx);
    if (!ctx.compute_stats) return;
    const std::vector<TensorUpdateStats>& mine = inner_->last_stats();
    std::vector<uint64_t> local(2 * slot_.size());
    for (size_t i = 0; i < slot_.size() && i < mine.size(); ++i) {
      local[2 * i] = pair_bits(mine[i].update_rms, mine[i].update_weight_ratio);
      local[2 * i + 1] = pair_bits(mine[i].ortho_error, 0.0f);
    }
    const std::vector<uint64_t> full = from_owners(parts_, local, 2, slot_, counted_, tensors_);
    stats_.resize(tensors_);
    for (size_t t = 0; t < tensors_; ++t)
      stats_[t] = {high_float(full[2 * t]), low_float(full[2 * t]), high_float(full[2 * t + 1])};
  }
  std::vector<StateBuffer> state() override { return inner_->state(); }
  size_t state_bytes() const override { return inner_->state_bytes(); }
  const std::vector<TensorUpdateStats>& last_stats() const override { return stats_; }
  void set_owned(const std::vector<bool>& owned) override { inner_->set_owned(owned); }
  std::vector<double> update_cost() const override { return inner_->update_cost(); }

 private:
  std::unique_ptr<Optimizer> inner_;
  Communicator& parts_;
  const std::vector<size_t>& slot_;
  const std::vector<bool>& counted_;
  size_t tensors_;
  std::vector<TensorUpdateStats> stats_;  // (the model's tensors)
};

}  // namespace

PartitionedPlan::PartitionedPlan(Communicator& world, Backend& backend, std::vector<ParamView> full, Comms comms,
                                 const std::function<std::unique_ptr<ParallelPlan>(Communicator&)>& inner,
                                 const std::function<bool(int, const std::string&)>& holds)
    : world_(world),
      backend_(backend),
      full_(std::move(full)),
      parts_(std::move(comms.parts)),
      part_world_(std::move(comms.part_world)),
      inner_(inner(*part_world_)),
      part_(parts_->rank()),
      part_count_(parts_->size()) {
  for (const ParamView& p : full_) {
    int s = 0;
    while (s < part_count_ && !holds(s, p.name)) ++s;
    SB_CHECK(s < part_count_, "tensor ", p.name, " is held by no part of the layout");
    owner_.push_back(s);
  }
  for (const ParamView& p : inner_->full_layout()) {  // the inner plan's tensors, each whole
    const ParamView* f = find_param(full_, p.name);
    SB_CHECK(f != nullptr, "tensor ", p.name, " of this rank is not a tensor of the model");
    slot_.push_back(size_t(f - full_.data()));
    counted_.push_back(owner_[slot_.back()] == part_);
  }
  holds_.resize(size_t(part_count_));
  for (int s = 0; s < part_count_; ++s)
    for (size_t t = 0; t < full_.size(); ++t)
      if (holds(s, full_[t].name)) holds_[size_t(s)].push_back(t);
}

std::unique_ptr<Optimizer> PartitionedPlan::make_optimizer(const Config& config, bool distributed) {
  return std::make_unique<PartOptimizer>(inner_->make_optimizer(config, distributed), *parts_, slot_, counted_,
                                         full_.size());
}

void PartitionedPlan::sum_scalars(int64_t* words, size_t n, size_t loss_words, size_t per) {
  std::vector<int64_t> mine(loss_words + slot_.size() * per);
  std::copy_n(words, loss_words, mine.begin());
  for (size_t i = 0; i < slot_.size(); ++i)
    std::copy_n(words + loss_words + slot_[i] * per, per, mine.begin() + ptrdiff_t(loss_words + i * per));
  inner_->sum_scalars(mine.data(), mine.size(), loss_words, per);
  std::fill(words, words + n, 0);
  std::copy_n(mine.begin(), loss_words, words);
  for (size_t i = 0; i < slot_.size(); ++i)
    std::copy_n(mine.begin() + ptrdiff_t(loss_words + i * per), per, words + loss_words + slot_[i] * per);
  parts_->allreduce_sum_i64(words, n);
}

SharedGradient PartitionedPlan::share_gradient(float* grad, bool fingerprints, bool statistics) {
  std::vector<const ParamView*> zeroed;  // the local tensors this part does not own, put back after the call
  std::vector<std::vector<float>> kept;
  for (size_t i = 0; i < slot_.size(); ++i) {
    const ParamView* p = counted_[i] ? nullptr : find_param(local_layout(), full_[slot_[i]].name);
    if (p == nullptr) continue;
    zeroed.push_back(p);
    kept.emplace_back(p->numel);
    backend_.copy_to_host(kept.back().data(), grad + p->offset, p->numel * sizeof(float));
    backend_.zero(grad + p->offset, p->numel * sizeof(float));
  }
  SharedGradient mine = inner_->share_gradient(grad, fingerprints, statistics);
  for (size_t k = 0; k < zeroed.size(); ++k)
    backend_.copy_from_host(grad + zeroed[k]->offset, kept[k].data(), zeroed[k]->numel * sizeof(float));
  SharedGradient out;
  if (fingerprints) out.fingerprints = gather(mine.fingerprints, 1);
  if (statistics) {
    std::vector<uint64_t> part(3 * slot_.size());
    for (size_t i = 0; i < slot_.size(); ++i) {
      part[3 * i] = pair_bits(mine.tensors[i].norm, mine.tensors[i].max_abs);
      part[3 * i + 1] = pair_bits(mine.tensors[i].mean, 0.0f);
      part[3 * i + 2] = det::bits_of(mine.tensors[i].sq);
    }
    const std::vector<uint64_t> full = gather(part, 3);
    out.tensors.resize(full_.size());
    for (size_t t = 0; t < full_.size(); ++t) {
      out.tensors[t] = {high_float(full[3 * t]), low_float(full[3 * t]), high_float(full[3 * t + 1]),
                        det::double_of_bits(full[3 * t + 2])};
    }
  }
  int64_t words[det::ExactSum::kWords];
  mine.squares.to_words(words);
  parts_->allreduce_sum_i64(words, det::ExactSum::kWords);
  out.squares = det::ExactSum::from_words(words);
  return out;
}

std::vector<uint64_t> PartitionedPlan::fingerprints(const float* local_flat) {
  return gather(inner_->fingerprints(local_flat), 1);
}

void PartitionedPlan::full_flat(const float* local_flat, std::vector<float>& out) {
  std::vector<float> part;
  inner_->full_flat(local_flat, part);
  out.clear();
  if (part_world_->rank() != 0) return;
  const std::vector<ParamView>& mine = inner_->full_layout();
  if (part_ == 0) out.assign(layout_flat_size(full_), 0.0f);
  for (size_t t = 0; t < full_.size(); ++t) {
    const size_t bytes = full_[t].numel * sizeof(float);
    if (owner_[t] == part_) {
      const float* from = part.data() + mine[local_of(t)].offset;
      if (part_ == 0) std::copy_n(from, full_[t].numel, out.data() + full_[t].offset);
      else parts_->send(from, bytes, 0);
    } else if (part_ == 0) {
      parts_->recv(out.data() + full_[t].offset, bytes, owner_[t]);
    }
  }
}

void PartitionedPlan::take_local(const std::vector<float>& full, float* local_flat) {
  uint64_t count = full.size();  // world rank 0's, checked on every rank
  world_.broadcast(&count, sizeof(count), 0);
  SB_CHECK(count == layout_flat_size(full_), "weights of ", count, " values for a parameter buffer of ",
           layout_flat_size(full_));
  const std::vector<ParamView>& mine = inner_->full_layout();
  std::vector<float> part;  // (the part's flat) on the part's first rank
  if (part_world_->rank() == 0) {
    part.assign(layout_flat_size(mine), 0.0f);
    for (int s = 0; s < part_count_ && part_ == 0; ++s)
      for (size_t t : holds_[size_t(s)]) {
        const float* from = full.data() + full_[t].offset;
        if (s == 0) std::copy_n(from, full_[t].numel, part.data() + mine[local_of(t)].offset);
        else parts_->send(from, full_[t].numel * sizeof(float), s);
      }
    if (part_ != 0)
      for (size_t t : holds_[size_t(part_)])
        parts_->recv(part.data() + mine[local_of(t)].offset, full_[t].numel * sizeof(float), 0);
  }
  inner_->take_local(part, local_flat);
}

void PartitionedPlan::full_state(std::vector<StateArray>& out) {
  std::vector<StateArray> mine;
  inner_->full_state(mine);  // on the part's first rank
  out.clear();
  if (part_world_->rank() != 0) return;
  if (part_ != 0) {
    ByteWriter w;
    dist_detail::put_arrays(w, mine, [&](const StateArray& a) { return owner_[tensor_of(a.name)] == part_; });
    dist_detail::send_bytes(w.bytes(), 0, *parts_);
    return;
  }
  std::vector<std::vector<StateArray>> per_tensor(full_.size());
  for (StateArray& a : mine) per_tensor[tensor_of(a.name)].push_back(std::move(a));
  for (int from = 1; from < part_count_; ++from) {
    std::vector<std::byte> bytes;
    dist_detail::recv_bytes(bytes, from, *parts_);
    ByteReader r(bytes, "the optimizer state of part " + std::to_string(from) + " of the layout",
                 dist_detail::kBroadcastHint);
    for (StateArray& a : dist_detail::get_arrays(r)) per_tensor[tensor_of(a.name)].push_back(std::move(a));
    r.finish();
  }
  for (std::vector<StateArray>& arrays : per_tensor)
    for (StateArray& a : arrays) out.push_back(std::move(a));
}

void PartitionedPlan::full_parts(const float* local_flat, const std::function<void(const StateParts&)>& use) {
  std::vector<float> part;
  std::vector<StateArray> arrays;
  inner_->full_flat(local_flat, part);
  inner_->full_state(arrays);
  if (part_world_->rank() != 0) return;
  const std::vector<ParamView>& mine = inner_->full_layout();
  dist_detail::StageArrays held;
  std::vector<size_t> numel;
  for (size_t t = 0; t < full_.size(); ++t) {
    numel.push_back(full_[t].numel);
    held.weights.push_back(owner_[t] == part_ ? part.data() + mine[local_of(t)].offset : nullptr);
  }
  for (const StateArray& a : arrays) {
    if (owner_[tensor_of(a.name)] != part_) continue;  // a copy another part owns
    held.names.push_back(a.name);
    held.sizes.push_back(a.data.size());
    held.data.push_back(a.data.data());
  }
  if (part_ != 0) return dist_detail::serve_parts(held, numel, *parts_);
  dist_detail::fetch_parts(
      held, numel, owner_, [&](const std::string& name) { return tensor_of(name); }, *parts_, use);
}

void PartitionedPlan::load_state(const std::vector<StateArray>& full) {
  std::vector<StateArray> mine;  // on the part's first rank
  if (part_world_->rank() == 0 && part_ == 0) {
    for (int s = part_count_ - 1; s >= 0; --s) {
      const std::vector<size_t>& held = holds_[size_t(s)];
      std::vector<StateArray> part;
      for (const StateArray& a : full)
        if (std::find(held.begin(), held.end(), tensor_of(a.name)) != held.end()) part.push_back(a);
      if (s == 0) {
        mine = std::move(part);
        continue;
      }
      ByteWriter w;
      dist_detail::put_arrays(w, part);
      dist_detail::send_bytes(w.bytes(), s, *parts_);
    }
  } else if (part_world_->rank() == 0) {
    std::vector<std::byte> bytes;
    dist_detail::recv_bytes(bytes, 0, *parts_);
    ByteReader r(bytes, "the optimizer state for part " + std::to_string(part_) + " of the layout",
                 dist_detail::kBroadcastHint);
    mine = dist_detail::get_arrays(r);
    r.finish();
  }
  // In the order of the part's local tensors, its optimizer's (expert shards: the shared ones first).
  std::vector<StateArray> ordered;
  for (const ParamView& p : inner_->local_layout())
    for (StateArray& a : mine)
      if (a.name.compare(0, a.name.find('/'), p.name) == 0) ordered.push_back(std::move(a));
  SB_CHECK(ordered.size() == mine.size(), "optimizer state of ", mine.size(), " arrays, ", ordered.size(),
           " of them of this part's tensors");
  inner_->load_state(ordered);
}

CommCounters PartitionedPlan::traffic_with(std::initializer_list<Communicator*> more) {
  CommCounters c = inner_->traffic();
  c += world_.counters();
  c += parts_->counters();
  for (Communicator* g : more)
    if (g != nullptr) c += g->counters();
  return c;
}

std::vector<uint64_t> PartitionedPlan::gather(const std::vector<uint64_t>& local, size_t per) {
  return from_owners(*parts_, local, per, slot_, counted_, full_.size());
}

size_t PartitionedPlan::local_of(size_t t) const {
  return size_t(std::find(slot_.begin(), slot_.end(), t) - slot_.begin());
}

size_t PartitionedPlan::tensor_of(const std::string& buffer) const {
  const ParamView* p = find_param(full_, buffer.substr(0, buffer.find('/')));
  SB_CHECK(p != nullptr, "optimizer state buffer '", buffer, "' names no tensor of the model");
  return size_t(p - full_.data());
}

}  // namespace sb
