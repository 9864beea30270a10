// Tensor parallelism's costs (docs/studies/parallel_costs.md), measured: run alone and under
// `mpirun -np T bench_tp VOCAB` (T = the TP degree, one TP group). For the 12-layer 768-wide GPT
// (12 heads; vocab VOCAB, default 50257; seq 64, one sequence per leaf) it prints, per rank, the
// bytes of weights, gradients and optimizer state (Muon + AdamW, optim.tp_mode = duplicated) and
// the scratch of the duplicated update, beside one process's; then the TP group's traffic of one
// leaf's forward and backward (p2p chains and broadcasts: the bytes each rank received, from the
// communicator's counters) per layer against Megatron's per-layer all-reduce volume, 4
// all-reduces of B·T·C fp32 values, a ring moving 2(T−1)/T of each to every rank, and of the
// vocabulary-parallel embedding, head and loss against Megatron's; last the latency of one leaf's
// forward and backward (256 tokens) with the chains passed whole and in row chunks (medians of
// interleaved repetitions). `bench_tp VOCAB exact` runs the model under numerics.gemm = exact,
// whose row-parallel products and column-parallel dX sum the ranks' integer dots (one all-reduce
// each, no chain: its latency is measured once, whole).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"
#include "samebits/core/parallel/tp_optimizer.hpp"

using namespace sb;

namespace {

GPTConfig two_layers(GPTConfig c) {
  c.n_layer = 2;
  return c;
}

// Bytes each rank received in one leaf's forward and backward (p2p chain links and broadcasts),
// mean over the TP group.
struct Traffic {
  double forward = 0, backward = 0;
};

std::vector<int32_t> leaf_tokens(const GPTConfig& c) {
  std::vector<int32_t> tokens(size_t(c.seq_len) + 1);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % size_t(c.vocab));
  return tokens;
}

Traffic leaf_traffic(GPT& model, TensorParallel& tp, Communicator& world) {
  const std::vector<int32_t> tokens = leaf_tokens(model.config());
  const CommCounters before = tp.tp().counters();
  model.forward(tokens.data());
  const CommCounters mid = tp.tp().counters();
  model.backward();
  const CommCounters after = tp.tp().counters();
  std::vector<uint64_t> mine{(mid - before).total_received(), (after - mid).total_received()};
  std::vector<uint64_t> ranks(2 * size_t(world.size()));
  world.allgather_u64(mine.data(), 2, ranks.data());
  Traffic t;
  for (int q = 0; q < world.size(); ++q) {
    t.forward += double(ranks[2 * size_t(q)]) / world.size();
    t.backward += double(ranks[2 * size_t(q) + 1]) / world.size();
  }
  return t;
}

// Median seconds of one leaf's forward and backward with the chains in `chunks[i]` row chunks, the
// settings interleaved rep by rep so that load on the machine falls on all of them alike.
std::vector<double> leaf_latency(GPT& model, Communicator& world, const std::vector<int>& chunks, int reps) {
  const std::vector<int32_t> tokens = leaf_tokens(model.config());
  std::vector<std::vector<double>> times(chunks.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < chunks.size(); ++i) {
      model.set_chain_chunks(chunks[i]);
      world.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      model.forward(tokens.data());
      model.backward();
      world.barrier();
      times[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  c.model.n_layer = 12;
  c.model.n_head = 12;
  c.model.n_embd = 768;
  c.model.seq_len = 64;
  c.model.vocab = argc > 1 ? std::atoi(argv[1]) : 50257;
  std::unique_ptr<Communicator> world = launched_by_mpi() ? make_mpi_communicator() : make_local_communicator();
  const int T = world->size();
  const bool exact = argc > 2 && std::string(argv[2]) == "exact";
  Numerics numerics = Numerics::deterministic();
  if (exact) numerics.gemm = GemmMode::exact;
  std::unique_ptr<Backend> be = make_cpu_backend(numerics);
  std::unique_ptr<TensorParallel> tp;
  if (T > 1) tp = std::make_unique<TensorParallel>(*world, T, c.model, *be);
  GPT model(c.model, 1, *be, tp ? &tp->group() : nullptr);
  model.init(1);
  std::unique_ptr<Optimizer> opt;
  if (tp) opt = std::make_unique<TpOptimizer>(c.optim, *tp, *be, Precision::fp32);
  else opt = make_optimizer(c.optim, model.params(), *be, Precision::fp32);
  const double weights = double(model.weights().bytes()), grads = double(model.grads().bytes());
  const double state = double(opt->state_bytes());
  const auto* tpo = dynamic_cast<const TpOptimizer*>(opt.get());
  const double scratch = tpo ? double(tpo->scratch_bytes()) : 0.0;
  // One process's bytes, from the full layout (the same buffers a tp = 1 rank allocates).
  double full_flat = 0, full_state = 0;
  for (const ParamView& p : gpt_param_layout(c.model)) {
    full_flat += double((p.numel + kParamAlign - 1) / kParamAlign * kParamAlign) * 4.0;
    full_state += double(p.numel) * 4.0 * (p.kind == ParamKind::matrix ? 1.0 : 2.0);
  }
  const double one = 2 * full_flat + full_state, mine = weights + grads + state;
  if (world->rank() == 0) {
    std::printf(
        "GPT 12x768, 12 heads, vocab %d, tp %d, gemm %s: per rank weights %.1f MB, grads %.1f MB, optimizer state "
        "%.1f MB = %.1f MB; one process %.1f MB; ratio %.3f (with the duplicated update's scratch %.1f MB: "
        "%.3f)\n",
        c.model.vocab, T, exact ? "exact" : "canonical", weights / 1e6, grads / 1e6, state / 1e6, mine / 1e6, one / 1e6,
        mine / one, scratch / 1e6, (mine + scratch) / one);
  }
  if (!tp) return 0;
  opt.reset();
  // Traffic: the model's forward and backward of one leaf at 12 layers and at 2 (the same shape);
  // the difference is 10 layers', the rest of the 2-layer pass the embedding's and the head's.
  const Traffic twelve = leaf_traffic(model, *tp, *world);
  const std::unique_ptr<TensorParallel> tp2 = std::make_unique<TensorParallel>(*world, T, two_layers(c.model), *be);
  GPT small(two_layers(c.model), 1, *be, &tp2->group());
  small.init(1);
  const Traffic two = leaf_traffic(small, *tp2, *world);
  if (world->rank() == 0) {
    const double L = c.model.n_layer, N = c.model.seq_len, X = N * c.model.n_embd * 4.0;  // B·T·C fp32 bytes
    const double ring = 2.0 * (T - 1) / T;  // a ring all-reduce moves this much of its payload to every rank
    const double fwd = (twelve.forward - two.forward) / (L - 2), bwd = (twelve.backward - two.backward) / (L - 2);
    std::printf(
        "TP traffic per layer of one leaf (B·T = %d tokens, C = %d): received per rank, mean over ranks: "
        "forward %.1f kB, backward %.1f kB, total %.1f kB; Megatron's 4 ring all-reduces of B·T·C: %.1f kB; "
        "ratio %.3f\n",
        c.model.seq_len, c.model.n_embd, fwd / 1e3, bwd / 1e3, (fwd + bwd) / 1e3, 4 * ring * X / 1e3,
        (fwd + bwd) / (4 * ring * X));
    // Megatron's vocabulary-parallel embedding (one all-reduce of B·T·C), cross-entropy (three of N
    // floats: the row max, the sum of exponentials, the target logit) and head dX (one of B·T·C).
    const double ef = two.forward - 2 * fwd, eb = two.backward - 2 * bwd, megatron = ring * (2 * X + 3 * N * 4.0);
    std::printf(
        "TP traffic of the vocabulary-parallel embedding and head (vocab %d): forward %.1f kB (the embedding "
        "and the loss's row statistics; no logits), backward %.1f kB; Megatron's %.1f kB; ratio %.3f\n",
        c.model.vocab, ef / 1e3, eb / 1e3, megatron / 1e3, (ef + eb) / megatron);
  }
  // Latency of a leaf of 256 tokens (64-row chunks at 4) with the chains passed whole and in 2 and
  // 4 row chunks: the same model, a longer sequence, so that a chunk's GEMM is not dominated by
  // packing the weights (which each chunk repeats).
  GPTConfig longer = c.model;
  longer.seq_len = 256;
  const std::unique_ptr<TensorParallel> tpl = std::make_unique<TensorParallel>(*world, T, longer, *be);
  GPT timed(longer, 1, *be, &tpl->group());
  timed.init(1);
  const std::vector<int> chunks = exact ? std::vector<int>{1} : std::vector<int>{1, 2, 4};
  const std::vector<double> t = leaf_latency(timed, *world, chunks, exact ? 3 : 5);
  if (world->rank() == 0) {
    std::printf("TP latency of one leaf's forward and backward (12 layers, 256 tokens, median of %d, interleaved):",
                exact ? 3 : 5);
    for (size_t i = 0; i < chunks.size(); ++i)
      std::printf(" %d chunk%s %.1f ms (%.3f)%s", chunks[i], chunks[i] == 1 ? "" : "s", t[i] * 1e3, t[i] / t[0],
                  i + 1 < chunks.size() ? "," : "\n");
  }
  return 0;
}
