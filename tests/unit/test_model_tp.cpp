// The tensor-parallel GPT (core/model/gpt_tp.cpp) on simulated ranks: each rank a thread with its
// own CPU backend, the TP group's messages synchronous (a send waits until the receiver has taken
// it, as MPI's rendezvous protocol does, so a chain order that could deadlock under MPI deadlocks
// here). One leaf's losses and every gradient, the ranks' shards placed into full tensors, equal
// one process's bit for bit at TP 2 and 3, tied and untied heads, a vocabulary that no group size
// divides (the cross-entropy's lanes continued across unaligned cuts), and chains passed whole or
// in 2, 3 or more row chunks than the leaf has rows; under numerics.gemm = exact (fp32, bf16) with
// the ranks' integer partial sums instead of chains, at vocabulary 61 and at 40 961, where the
// head's dX sums pass as two 32-bit limbs per element.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/model/tp_group.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/ops/exact_gemm.hpp"

using namespace sb;

namespace {

// Mailboxes between the ranks' threads: one message in flight per (from, to).
struct Mail {
  std::mutex m;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<std::vector<float>>> box;
};

class ThreadGroup final : public TpGroup {
 public:
  ThreadGroup(Mail& mail, int rank, int size) : mail_(mail), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(const float* x, size_t n, int to) override {
    std::unique_lock lock(mail_.m);
    auto& q = mail_.box[{rank_, to}];
    q.emplace_back(x, x + n);
    mail_.cv.notify_all();
    mail_.cv.wait(lock, [&] { return q.empty(); });  // synchronous: until the receiver took it
  }
  void recv(float* x, size_t n, int from) override {
    std::unique_lock lock(mail_.m);
    auto& q = mail_.box[{from, rank_}];
    mail_.cv.wait(lock, [&] { return !q.empty(); });
    REQUIRE(q.front().size() == n);
    std::memcpy(x, q.front().data(), n * sizeof(float));
    q.pop_front();
    mail_.cv.notify_all();
  }
  void broadcast(float* x, size_t n, int root) override {
    if (rank_ != root) return recv(x, n, root);
    for (int q = 0; q < size_; ++q)
      if (q != root) send(x, n, q);
  }
  // The integer reductions through rank 0, each word's bits carried in floats.
  void sum(uint64_t* x, size_t n) override {
    reduce(x, n, [](uint64_t& a, uint64_t b) { a += b; });
  }
  void max(int32_t* x, size_t n) override {
    reduce(x, n, [](int32_t& a, int32_t b) { a = std::max(a, b); });
  }

 private:
  template <class T, class Op>
  void reduce(T* x, size_t n, Op op) {
    const size_t floats = n * sizeof(T) / sizeof(float);
    std::vector<T> part(n);
    if (rank_ != 0) send(reinterpret_cast<const float*>(x), floats, 0);
    for (int q = 1; q < size_ && rank_ == 0; ++q) {
      recv(reinterpret_cast<float*>(part.data()), floats, q);
      for (size_t i = 0; i < n; ++i) op(x[i], part[i]);
    }
    broadcast(reinterpret_cast<float*>(x), floats, 0);
  }
  Mail& mail_;
  int rank_, size_;
};

struct Leaf {
  std::vector<float> token_losses;
  std::vector<std::vector<float>> grads;  // (tensors) full tensors, the full layout's order
};

std::vector<int32_t> leaf_tokens(const GPTConfig& cfg, int B) {
  std::vector<int32_t> t(size_t(B) * (cfg.seq_len + 1));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 37 + i / 5) % size_t(cfg.vocab));
  t[3] = cfg.vocab - 1;  // the last vocabulary row, on the last rank
  return t;
}

Leaf one_process(const GPTConfig& cfg, int B, Numerics numerics = Numerics::deterministic()) {
  auto be = make_cpu_backend(numerics);
  GPT m(cfg, B, *be);
  m.init(7);
  const std::vector<int32_t> tokens = leaf_tokens(cfg, B);
  m.forward(tokens.data());
  m.backward();
  Leaf out{m.token_losses(), {}};
  for (const ParamView& p : m.params()) {
    const float* g = m.grads().data_as<float>() + p.offset;
    out.grads.emplace_back(g, g + p.numel);
  }
  return out;
}

// Every rank's leaf; the gradients' shards placed into full tensors (replicated ones from rank 0,
// checked equal on every rank).
Leaf tensor_parallel(const GPTConfig& cfg, int B, int S, int chunks, Numerics numerics = Numerics::deterministic()) {
  Mail mail;
  const std::vector<int32_t> tokens = leaf_tokens(cfg, B);
  const std::vector<ParamView> full = gpt_param_layout(cfg);
  Leaf out;
  for (const ParamView& p : full) out.grads.emplace_back(p.numel, 0.0f);
  std::vector<std::vector<float>> losses(static_cast<size_t>(S));
  std::mutex placing;
  std::vector<std::thread> ranks;
  for (int r = 0; r < S; ++r) {
    ranks.emplace_back([&, r] {
      omp_set_num_threads(1 + r % 2);
      auto be = make_cpu_backend(numerics);
      ThreadGroup group(mail, r, S);
      GPT m(cfg, B, *be, &group);
      m.set_chain_chunks(chunks);
      m.init(7);
      m.forward(tokens.data());
      m.backward();
      losses[size_t(r)] = m.token_losses();
      const TpLayout& t = m.tp_layout();
      const std::lock_guard lock(placing);
      for (size_t k = 0; k < t.local.size(); ++k) {
        const float* g = m.grads().data_as<float>() + t.local[k].offset;
        if (t.splits[k].sharded) tp_place_shard(t.splits[k], r, g, out.grads[k].data());
        else if (r == 0) std::memcpy(out.grads[k].data(), g, t.local[k].numel * sizeof(float));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 1; r < S; ++r) CHECK(std::memcmp(losses[size_t(r)].data(), losses[0].data(), losses[0].size() * 4) == 0);
  out.token_losses = losses[0];
  return out;
}

// 2 layers, 6 heads, 48 wide; vocabulary 61: 31 | 30 rows at TP 2, 21 | 21 | 19 at TP 3, no cut on
// a multiple of 32.
GPTConfig small_gpt(bool tied) {
  GPTConfig cfg;
  cfg.vocab = 61;
  cfg.seq_len = 16;
  cfg.n_layer = 2;
  cfg.n_head = 6;
  cfg.n_embd = 48;
  cfg.tied_head = tied;
  return cfg;
}

}  // namespace

TEST_CASE("tensor-parallel GPT: one leaf's losses and gradients are one process's bits, chunked or not") {
  const int saved = omp_get_max_threads();
  for (bool tied : {true, false}) {
    const GPTConfig cfg = small_gpt(tied);
    const int B = 2;  // 32 rows
    const Leaf ref = one_process(cfg, B);
    const std::vector<ParamView> full = gpt_param_layout(cfg);
    for (int S : {2, 3}) {
      for (int chunks : {1, 2, 3, 40}) {
        CAPTURE(tied);
        CAPTURE(S);
        CAPTURE(chunks);
        const Leaf tp = tensor_parallel(cfg, B, S, chunks);
        CHECK(std::memcmp(tp.token_losses.data(), ref.token_losses.data(), ref.token_losses.size() * 4) == 0);
        for (size_t k = 0; k < full.size(); ++k) {
          CAPTURE(full[k].name);
          CHECK(std::memcmp(tp.grads[k].data(), ref.grads[k].data(), full[k].numel * 4) == 0);
        }
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("tensor-parallel grouped-query attention and QK-norm: one process's bits at every head split") {
  const int saved = omp_get_max_threads();
  struct Heads {
    int n_head, n_kv_head;
    bool qk_norm;
    std::vector<int> splits;
  };
  // 12 query heads of 4 values: 6 key/value heads (2 query heads each), 2 (6 each), one per head.
  for (const Heads h : {Heads{12, 6, true, {2, 3, 6}}, Heads{12, 2, false, {2}}, Heads{12, 2, true, {2}},
                        Heads{12, 0, true, {2, 3, 4}}}) {
    GPTConfig cfg = small_gpt(true);
    cfg.n_head = h.n_head, cfg.n_kv_head = h.n_kv_head, cfg.qk_norm = h.qk_norm;
    cfg.norm = NormKind::rmsnorm, cfg.mlp = MlpKind::swiglu, cfg.ffn_dim = 72, cfg.pos = PosKind::rope;
    cfg.bias = false;
    const Leaf ref = one_process(cfg, 2);
    const std::vector<ParamView> full = gpt_param_layout(cfg);
    for (int S : h.splits) {
      CAPTURE(h.n_kv_head);
      CAPTURE(h.qk_norm);
      CAPTURE(S);
      const Leaf tp = tensor_parallel(cfg, 2, S, 2);
      CHECK(std::memcmp(tp.token_losses.data(), ref.token_losses.data(), ref.token_losses.size() * 4) == 0);
      for (size_t k = 0; k < full.size(); ++k) {
        CAPTURE(full[k].name);
        CHECK(std::memcmp(tp.grads[k].data(), ref.grads[k].data(), full[k].numel * 4) == 0);
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("tensor-parallel GPT under gemm=exact: the ranks' integer partial sums give one process's bits") {
  const int saved = omp_get_max_threads();
  const GPTConfig cfg = small_gpt(false);
  Numerics exact = Numerics::deterministic();
  exact.gemm = GemmMode::exact;
  for (Precision p : {Precision::fp32, Precision::bf16}) {
    exact.precision = p;
    const Leaf ref = one_process(cfg, 2, exact);
    const std::vector<ParamView> full = gpt_param_layout(cfg);
    for (int S : {2, 3}) {
      CAPTURE(S);
      CAPTURE(to_string(p));
      const Leaf tp = tensor_parallel(cfg, 2, S, 1, exact);
      CHECK(std::memcmp(tp.token_losses.data(), ref.token_losses.data(), ref.token_losses.size() * 4) == 0);
      for (size_t k = 0; k < full.size(); ++k) {
        CAPTURE(full[k].name);
        CHECK(std::memcmp(tp.grads[k].data(), ref.grads[k].data(), full[k].numel * 4) == 0);
      }
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("tensor-parallel GPT under gemm=exact at vocab 40 961: the two-word integer partial sums") {
  // The head's dX sums over the vocabulary: k = 40 961 > 2^15, so k·2^(12s) ≥ 2^63 at s = 4 (fp32)
  // and the ranks pass each element's integer dot as two 32-bit limbs (gemm_exact_split).
  const int saved = omp_get_max_threads();
  GPTConfig cfg = small_gpt(true);
  cfg.vocab = 40961;  // 20 481 | 20 480 rows at TP 2, 13 654 | 13 654 | 13 653 at TP 3
  cfg.n_layer = 1;
  REQUIRE_FALSE(ops::exact::narrow_dot(cfg.vocab, 4));
  Numerics exact = Numerics::deterministic();
  exact.gemm = GemmMode::exact;
  const Leaf ref = one_process(cfg, 1, exact);
  const Leaf canonical = one_process(cfg, 1);
  CHECK(std::memcmp(canonical.token_losses.data(), ref.token_losses.data(), ref.token_losses.size() * 4) != 0);
  const std::vector<ParamView> full = gpt_param_layout(cfg);
  for (int S : {2, 3}) {
    CAPTURE(S);
    const Leaf tp = tensor_parallel(cfg, 1, S, 1, exact);
    CHECK(std::memcmp(tp.token_losses.data(), ref.token_losses.data(), ref.token_losses.size() * 4) == 0);
    for (size_t k = 0; k < full.size(); ++k) {
      CAPTURE(full[k].name);
      CHECK(std::memcmp(tp.grads[k].data(), ref.grads[k].data(), full[k].numel * 4) == 0);
    }
  }
  omp_set_num_threads(saved);
}
