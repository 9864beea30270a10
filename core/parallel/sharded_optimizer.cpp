// ShardedOptimizer (parallel/sharded_optimizer.hpp): the inner optimizer updates this rank's tensors;
// owners broadcast weights (in place, in backend memory) and statistics, and send rank 0 their state
// for checkpoints. Determinism: no arithmetic here — only copies of bits — so the result is the
// unsharded optimizer's, whatever the world.
#include "samebits/core/parallel/sharded_optimizer.hpp"

#include <cstring>
#include <map>
#include <type_traits>
#include <utility>

#include "byte_stream.hpp"
#include "samebits/core/byte_codec.hpp"
#include "samebits/det/error.hpp"

namespace sb {

static_assert(std::is_trivially_copyable_v<TensorUpdateStats>);

ShardedOptimizer::ShardedOptimizer(std::unique_ptr<Optimizer> inner, std::vector<ParamView> params,
                                   const std::vector<double>& cost, Backend& backend, Communicator& comm)
    : inner_(std::move(inner)),
      params_(std::move(params)),
      backend_(backend),
      comm_(comm),
      cost_(cost),
      ownership_(assign_owners(cost_, comm.size())),
      owned_(static_cast<size_t>(comm.size())) {
  SB_CHECK(ownership_.owner.size() == params_.size(), "ShardedOptimizer: the optimizer reports ",
           ownership_.owner.size(), " update costs for ", params_.size(), " tensors");
  for (size_t i = 0; i < params_.size(); ++i) owned_[size_t(ownership_.owner[i])].push_back(i);
  inner_->set_owned(ownership_.owned_by(comm_.rank()));
  stats_ = inner_->last_stats();
}

void ShardedOptimizer::step(float* weights, const float* grads, const StepContext& ctx) {
  inner_->step(weights, grads, ctx);
  stats_ = inner_->last_stats();
  for (int root = 0; root < comm_.size(); ++root) {
    const std::vector<size_t>& tensors = owned_[size_t(root)];
    // The weights in place, where the backend keeps them (the communicator follows the backend:
    // NCCL on device memory), one broadcast per run of tensors adjacent in the layout (the
    // padding between them is zero on every rank).
    for (size_t k = 0; k < tensors.size();) {
      size_t last = k;
      while (last + 1 < tensors.size() && tensors[last + 1] == tensors[last] + 1) ++last;
      const ParamView& a = params_[tensors[k]];
      const ParamView& b = params_[tensors[last]];
      comm_.broadcast(weights + a.offset, (b.offset + b.numel - a.offset) * sizeof(float), root);
      k = last + 1;
    }
    if (!ctx.compute_stats || tensors.empty()) continue;
    staging_.resize(tensors.size() * sizeof(TensorUpdateStats));  // host: O(tensors)
    unsigned char* at = staging_.data();
    const bool mine = root == comm_.rank();
    if (mine) {
      for (size_t j = 0; j < tensors.size(); ++j)
        std::memcpy(at + j * sizeof(TensorUpdateStats), &stats_[tensors[j]], sizeof(TensorUpdateStats));
    }
    comm_.broadcast(staging_.data(), staging_.size(), root);
    if (mine) continue;
    for (size_t j = 0; j < tensors.size(); ++j)
      std::memcpy(&stats_[tensors[j]], at + j * sizeof(TensorUpdateStats), sizeof(TensorUpdateStats));
  }
}

std::vector<StateBuffer> ShardedOptimizer::state() { return inner_->state(); }
size_t ShardedOptimizer::state_bytes() const { return inner_->state_bytes(); }
const std::vector<TensorUpdateStats>& ShardedOptimizer::last_stats() const { return stats_; }
std::vector<double> ShardedOptimizer::update_cost() const { return cost_; }

void ShardedOptimizer::set_owned(const std::vector<bool>&) {
  SB_FAIL(
      "ShardedOptimizer::set_owned: the distributed optimizer assigns the tensors itself "
      "(a function of the layout and the world size); set ownership on an unsharded optimizer");
}

std::vector<StateArray> ShardedOptimizer::gather_state() {
  // Owner r's message: per owned tensor, its index, its buffer count, then (name, values) each.
  // StateBuffer names are "<tensor name>/<kind>" (optim/optimizer.hpp).
  std::vector<std::vector<StateArray>> per_tensor(params_.size());  // [tensor] its buffers
  const std::vector<StateBuffer> mine = inner_->state();
  const int me = comm_.rank();
  for (int root = 0; root < comm_.size(); ++root) {
    if (me != 0 && root != me) continue;  // rank 0 receives every owner's message
    ByteWriter w;
    if (root == me) {
      size_t b = 0;
      for (size_t i : owned_[size_t(root)]) {
        const std::string prefix = params_[i].name + "/";
        size_t first = b;
        while (b < mine.size() && mine[b].name.compare(0, prefix.size(), prefix) == 0) ++b;
        w.put(uint64_t{i});
        w.put(uint64_t{b - first});
        for (size_t k = first; k < b; ++k) {
          std::vector<float> host(mine[k].numel);  // (numel)
          backend_.copy_to_host(host.data(), mine[k].data, mine[k].numel * sizeof(float));
          w.put_string(mine[k].name);
          w.put_vector(host);
        }
      }
      SB_CHECK(b == mine.size(), "ShardedOptimizer: state buffer '", mine[b].name,
               "' does not belong to a tensor this rank owns");
    }
    if (me != 0) {
      dist_detail::send_bytes(w.bytes(), 0, comm_);
      return {};
    }
    if (root != 0) dist_detail::recv_bytes(w.bytes(), root, comm_);
    ByteReader r(w.bytes(), "the optimizer state from rank " + std::to_string(root), dist_detail::kBroadcastHint);
    for (size_t t = 0; t < owned_[size_t(root)].size(); ++t) {
      const auto i = r.get<uint64_t>();
      SB_CHECK(i < params_.size() && ownership_.owner[i] == root, "rank ", root, " sent the state of tensor ", i,
               ", which it does not own in this world of ", comm_.size(),
               " ranks; the ranks run different samebits builds");
      for (StateArray& a : dist_detail::get_arrays(r)) per_tensor[i].push_back(std::move(a));
    }
    r.finish();
  }
  std::vector<StateArray> full;
  for (std::vector<StateArray>& arrays : per_tensor)
    for (StateArray& a : arrays) full.push_back(std::move(a));
  return full;
}

void ShardedOptimizer::scatter_state(const std::vector<StateArray>& full) {
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < full.size(); ++k) {
    SB_CHECK(index.emplace(full[k].name, k).second, "checkpoint optimizer state names '", full[k].name,
             "' twice; the file is inconsistent");
  }
  const std::vector<StateBuffer> mine = inner_->state();
  std::vector<const StateArray*> source;  // (mine.size()) the checkpoint array of each buffer
  for (const StateBuffer& b : mine) {
    const auto found = index.find(b.name);
    SB_CHECK(found != index.end(), "the checkpoint has no optimizer state '", b.name,
             "'; it is from a different optimizer configuration");
    const StateArray& a = full[found->second];
    SB_CHECK(a.data.size() == b.numel, "checkpoint optimizer state '", b.name, "' holds ", a.data.size(),
             " values; this optimizer expects ", b.numel);
    source.push_back(&a);
  }
  uint64_t total = mine.size();
  comm_.allreduce_sum_u64(&total, 1);
  SB_CHECK(total == full.size(), "checkpoint holds ", full.size(), " optimizer state buffers; this optimizer has ",
           total, ": the checkpoint is from a different optimizer configuration");
  for (size_t k = 0; k < mine.size(); ++k) {
    backend_.copy_from_host(mine[k].data, source[k]->data.data(), mine[k].numel * sizeof(float));
  }
}

std::vector<uint64_t> state_bytes_per_rank(const Optimizer& optimizer, Communicator& comm) {
  const uint64_t mine = optimizer.state_bytes();
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  comm.allgather_u64(&mine, 1, all.data());
  return all;
}

}  // namespace sb
