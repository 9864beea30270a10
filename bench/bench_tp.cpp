// Tensor parallelism's costs (docs/DISTRIBUTED.md §10), measured: run alone and under
// `mpirun -np T bench_tp VOCAB` (T = the TP degree, one TP group). For the 12-layer 768-wide GPT
// (12 heads; vocab VOCAB, default 50257; seq 64, one sequence per leaf) it prints, per rank, the
// bytes of weights, gradients and optimizer state (Muon + AdamW, optim.tp_mode = duplicated) and
// the scratch of the duplicated update, beside one process's; then the TP group's traffic of one
// leaf's forward and backward per layer (p2p chains and broadcasts, the bytes each rank
// received, from the communicator's counters) against Megatron's per-layer all-reduce volume,
// 4 all-reduces of B·T·C fp32 values, a ring moving 2(T−1)/T of each to every rank.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/parallel/tensor_parallel.hpp"
#include "samebits/core/parallel/tp_optimizer.hpp"

using namespace sb;

int main(int argc, char** argv) {
  Config c;
  c.model.n_layer = 12;
  c.model.n_head = 12;
  c.model.n_embd = 768;
  c.model.seq_len = 64;
  c.model.vocab = argc > 1 ? std::atoi(argv[1]) : 50257;
  std::unique_ptr<Communicator> world = launched_by_mpi() ? make_mpi_communicator() : make_local_communicator();
  const int T = world->size();
  std::unique_ptr<Backend> be = make_cpu_backend();
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
        "GPT 12x768, 12 heads, vocab %d, tp %d: per rank weights %.1f MB, grads %.1f MB, optimizer state "
        "%.1f MB = %.1f MB; one process %.1f MB; ratio %.3f (with the duplicated update's scratch %.1f MB: "
        "%.3f)\n",
        c.model.vocab, T, weights / 1e6, grads / 1e6, state / 1e6, mine / 1e6, one / 1e6, mine / one, scratch / 1e6,
        (mine + scratch) / one);
  }
  if (!tp) return 0;
  std::vector<int32_t> tokens(size_t(c.model.seq_len) + 1);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % size_t(c.model.vocab));
  const CommCounters before = tp->tp().counters();
  model.forward(tokens.data());
  const CommCounters mid = tp->tp().counters();
  model.backward();
  const CommCounters after = tp->tp().counters();
  auto received = [](const CommCounters& d) {
    return double(d.received[size_t(Collective::send)] + d.received[size_t(Collective::broadcast)]);
  };
  double r[2] = {received(mid - before), received(after - mid)};  // this rank's forward, backward
  std::vector<uint64_t> mine_words{uint64_t(r[0]), uint64_t(r[1])}, all(2 * size_t(T));
  world->allgather_u64(mine_words.data(), 2, all.data());
  if (world->rank() == 0) {
    double fwd = 0, bwd = 0;
    for (int q = 0; q < T; ++q) fwd += double(all[2 * size_t(q)]), bwd += double(all[2 * size_t(q) + 1]);
    const double L = c.model.n_layer, X = double(c.model.seq_len) * c.model.n_embd * 4.0;  // B·T·C fp32 bytes
    const double megatron = 4.0 * X * 2.0 * (T - 1) / T;  // per rank per layer, ring all-reduces
    std::printf(
        "TP traffic per layer of one leaf (B·T = %d tokens, C = %d): received per rank, mean over ranks: "
        "forward %.1f kB, backward %.1f kB, total %.1f kB; Megatron's 4 ring all-reduces of B·T·C: %.1f kB; "
        "ratio %.3f\n",
        c.model.seq_len, c.model.n_embd, fwd / T / L / 1e3, bwd / T / L / 1e3, (fwd + bwd) / T / L / 1e3,
        megatron / 1e3, (fwd + bwd) / T / L / megatron);
  }
  return 0;
}
