// The DP × TP layout (parallel/tensor_parallel.hpp). Determinism: nothing here computes a float.
// Shards are moved bit for bit (all-gathers of their bits); per-tensor exact sums (ExactSum words,
// integer) are added across the TP group with every replicated tensor's words from TP rank 0 only,
// and max |g| is a max, so every recorded value is the one of the whole tensor on one process.
#include "samebits/core/parallel/tensor_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb {
namespace {

// Every rank's `n` floats (n ≤ widest) gathered bit for bit, each rank's block padded to `widest`
// floats (two fp32 bit patterns per uint64): rank r's block starts at byte r·stride of the result.
struct Gathered {
  std::vector<uint64_t> words;
  size_t stride = 0;  // bytes per rank
  const unsigned char* block(int r) const {
    return reinterpret_cast<const unsigned char*>(words.data()) + size_t(r) * stride;
  }
};

Gathered allgather_padded(Communicator& comm, const float* mine, size_t n, size_t widest) {
  const size_t per = (widest + 1) / 2;
  std::vector<uint64_t> out(per, 0);
  std::memcpy(out.data(), mine, n * sizeof(float));
  Gathered g{std::vector<uint64_t>(per * size_t(comm.size())), per * sizeof(uint64_t)};
  comm.allgather_u64(out.data(), per, g.words.data());
  return g;
}

}  // namespace

class TensorParallel::Group final : public TpGroup {
 public:
  explicit Group(Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void send(const float* x, size_t n, int to) override { comm_.send(x, n * sizeof(float), to); }
  void recv(float* x, size_t n, int from) override { comm_.recv(x, n * sizeof(float), from); }
  void broadcast(float* x, size_t n, int root) override { comm_.broadcast(x, n * sizeof(float), root); }
  void sum(uint64_t* x, size_t n) override { comm_.allreduce_sum_u64(x, n); }
  void max(int32_t* x, size_t n) override {  // the ranks' values gathered, the max taken locally
    std::vector<uint64_t> mine(x, x + n), all(n * size_t(comm_.size()));
    comm_.allgather_u64(mine.data(), n, all.data());
    for (size_t i = 0; i < n; ++i)
      for (int r = 0; r < comm_.size(); ++r) x[i] = std::max(x[i], int32_t(all[size_t(r) * n + i]));
  }

 private:
  Communicator& comm_;
};

TensorParallel::TensorParallel(Communicator& world, int tp, const GPTConfig& model, Backend& backend, int stages,
                               int stage, ExpertShard shard) {
  validate_tp(model, tp);
  SB_CHECK(world.size() % tp == 0, "config parallel.tp=", tp, " does not divide the world of ", world.size(),
           " ranks: start mpirun -np N with N a multiple of parallel.tp (N = data-parallel groups × tp)");
  SB_CHECK(backend.device() == Device::cpu, "config parallel.tp=", tp,
           " runs on CPU ranks (run.backend=cpu); tensor parallelism over CUDA ranks is not built yet");
  const int w = world.rank();
  tp_ = world.split(w / tp, w % tp);
  dp_ = world.split(w % tp, w / tp);
  group_ = std::make_unique<Group>(*tp_);
  layout_ = gpt_tp_layout(model, tp, tp_->rank(), stages, stage, shard);
  std::vector<TensorSpan> spans;
  for (const ParamView& p : layout_.local) spans.push_back({p.offset, p.numel});
  sums_ = backend.make_tensor_sums(spans);
}

TensorParallel::~TensorParallel() = default;

TpGroup& TensorParallel::group() { return *group_; }

void TensorParallel::gather_shard(size_t t, const float* shard, float* full) {
  const TpSplit& s = layout_.splits[t];
  if (!s.sharded) {
    std::memcpy(full, shard, layout_.local[t].numel * sizeof(float));
    return;
  }
  // The vocabulary split's last shard is shorter than the others: padded to the first's.
  const Gathered g = allgather_padded(*tp_, shard, s.numel(layout_.rank), s.numel(0));
  std::vector<float> piece(s.numel(0));
  for (int r = 0; r < layout_.size; ++r) {
    std::memcpy(piece.data(), g.block(r), s.numel(r) * sizeof(float));
    tp_place_shard(s, r, piece.data(), full);
  }
}

void TensorParallel::gather(size_t t, const float* local_flat, float* full) {
  gather_shard(t, local_flat + layout_.local[t].offset, full);
}

std::vector<uint64_t> TensorParallel::fingerprints(const float* local_flat) {
  std::vector<uint64_t> out(layout_.local.size());
  std::vector<float> full;
  for (size_t t = 0; t < out.size(); ++t) {
    if (!layout_.splits[t].sharded) {
      out[t] = det::fingerprint(local_flat + layout_.local[t].offset, layout_.local[t].numel);
      continue;
    }
    full.resize(layout_.full[t].numel);
    gather(t, local_flat, full.data());
    out[t] = det::fingerprint(full.data(), full.size());
  }
  return out;
}

size_t TensorParallel::full_flat_size() const {
  size_t n = 0;
  for (const ParamView& p : layout_.full)
    n = std::max(n, p.offset + (p.numel + kParamAlign - 1) / kParamAlign * kParamAlign);
  return n;
}

void TensorParallel::take_local(const float* full_flat, float* local_flat) const {
  std::memset(local_flat, 0, layout_.local_flat * sizeof(float));
  for (size_t t = 0; t < layout_.full.size(); ++t) {
    const float* from = full_flat + layout_.full[t].offset;
    float* to = local_flat + layout_.local[t].offset;
    if (layout_.splits[t].sharded) {
      tp_take_shard(layout_.splits[t], layout_.rank, from, to);
    } else {
      std::memcpy(to, from, layout_.local[t].numel * sizeof(float));
    }
  }
}

void TensorParallel::mask_replicated(int64_t* words, size_t per) const {
  if (layout_.rank == 0) return;
  for (size_t t = 0; t < layout_.splits.size(); ++t)
    if (!layout_.splits[t].sharded) std::memset(words + t * per, 0, per * sizeof(int64_t));
}

SharedGradient TensorParallel::share(const float* grad, bool fingerprints_wanted, bool statistics) {
  const size_t tensors = layout_.local.size(), kw = det::ExactSum::kWords;
  std::vector<det::ExactSum> sq(tensors), sum(tensors);
  std::vector<float> max_abs(tensors);
  sums_->clear();
  sums_->add(grad, statistics);
  sums_->read(sq.data(), statistics ? sum.data() : nullptr, statistics ? max_abs.data() : nullptr);
  // Per tensor: Σ g² words, then (statistics) Σ g words; replicated tensors from TP rank 0 only.
  const size_t per = statistics ? 2 * kw : kw;
  std::vector<int64_t> words(tensors * per);
  for (size_t t = 0; t < tensors; ++t) {
    sq[t].to_words(words.data() + t * per);
    if (statistics) sum[t].to_words(words.data() + t * per + kw);
  }
  mask_replicated(words.data(), per);
  tp_->allreduce_sum_i64(words.data(), words.size());
  SharedGradient out;
  for (size_t t = 0; t < tensors; ++t) {
    sq[t] = det::ExactSum::from_words(words.data() + t * per);
    out.squares.merge(sq[t]);
  }
  if (statistics) {
    // max |g| of every shard (as bits: every rank gets them all), NaN when any is NaN.
    std::vector<uint64_t> mine(tensors), all(tensors * static_cast<size_t>(layout_.size));
    for (size_t t = 0; t < tensors; ++t) {
      uint32_t b;
      std::memcpy(&b, &max_abs[t], sizeof b);
      mine[t] = b;
    }
    tp_->allgather_u64(mine.data(), tensors, all.data());
    out.tensors.resize(tensors);
    for (size_t t = 0; t < tensors; ++t) {
      float m = 0.0f;
      for (int r = 0; r < layout_.size; ++r) {
        const auto b = static_cast<uint32_t>(all[size_t(r) * tensors + t]);
        float x;
        std::memcpy(&x, &b, sizeof x);
        m = std::isnan(m) || std::isnan(x) ? std::nanf("") : std::max(m, x);
      }
      const det::ExactSum s = det::ExactSum::from_words(words.data() + t * per + kw);
      out.tensors[t] = batch_sums(sq[t], s, m, layout_.full[t].numel);
    }
  }
  if (fingerprints_wanted) out.fingerprints = fingerprints(grad);
  return out;
}

}  // namespace sb
