// tp_oracle_export OUT.h5: one Muon step of a tensor-parallel group (optim.tp_mode = blockwise,
// distributed, distributed_exact; docs/DISTRIBUTED.md §10) through samebits' own code path: the
// GPT's TP layout (gpt_tp_layout, tp_take_shard), each rank a thread with its own CPU backend and a
// ThreadWorld communicator (thread_world.hpp: MPI's collectives, the float SUM in rank order), Muon
// over the rank's local layout — as is for blockwise (the trainer's make_optimizer), with
// tp_matrix_shards over a TpNsGroup for the distributed modes (make_tp_shard_optimizer's). Seeded
// full weights, gradients and momenta; tp_oracle.py recomputes every rank's update in PyTorch
// float64. Layout (oracle_h5.hpp's writer), per case and sharded matrix:
//   /tp/<case>/<tensor>  attrs mode tp rows cols outer part inner local_rows local_cols lr
//                        weight_decay momentum nesterov ns_eps scale_rule split_qkv
//                        f32 (rows, cols): W G M0 (the full matrix before the step);
//                        f32 (tp, local numel): W_new M_new (each rank's shard after it);
//                        f32 (tp): update_rms ortho_error (each rank's statistics); f64 (steps, 3): ns
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "oracle_h5.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/core/parallel/thread_world.hpp"
#include "samebits/core/parallel/tp_ns_group.hpp"

namespace {

using namespace sb;
using namespace sb::oracle;

struct Case {
  const char* name;
  TpMode mode;
  int tp;
  MuonScale scale;
  bool split_qkv = false;
};

// One rank's local flat buffer of the full tensors `full` (gpt_param_layout offsets).
std::vector<float> local_flat(const TpLayout& L, const std::vector<float>& full) {
  std::vector<float> out(L.local_flat, 0.0f);
  for (size_t t = 0; t < L.full.size(); ++t) {
    const float* from = full.data() + L.full[t].offset;
    float* to = out.data() + L.local[t].offset;
    if (L.splits[t].sharded) {
      tp_take_shard(L.splits[t], L.rank, from, to);
    } else {
      std::memcpy(to, from, L.local[t].numel * sizeof(float));
    }
  }
  return out;
}

struct RankResult {
  std::vector<float> weights, momentum;  // (local_flat) after the step; momentum 0 off matrices
  std::vector<TensorUpdateStats> stats;  // (tensors)
};

void tp_case(hid_t file, const GPTConfig& model, const Case& c, uint32_t seed) {
  OptimConfig config;
  config.lr = 0.02;
  config.weight_decay = 0.1;
  config.scale = c.scale;
  config.split_qkv = c.split_qkv;
  config.tp_mode = c.mode;
  const MuonOptions o = muon_options(config);
  const std::vector<ParamView> full = gpt_param_layout(model);
  size_t flat = 0;
  for (const ParamView& p : full) flat = std::max(flat, p.offset + p.numel);
  const std::vector<float> w0 = normal(flat, seed, 0.02f), g = normal(flat, seed + 1, 1e-3f),
                           m0 = normal(flat, seed + 2, 1e-3f);
  std::vector<RankResult> results(static_cast<size_t>(c.tp));
  ThreadWorld world(c.tp);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < c.tp; ++r) comms.push_back(world.rank(r));
  run_ranks(c.tp, [&](int r) {
    omp_set_num_threads(1);
    const TpLayout L = gpt_tp_layout(model, c.tp, r);
    auto be = make_cpu_backend();
    Muon opt(L.local, *be, Precision::fp32, o);
    if (c.mode != TpMode::blockwise)
      opt.set_shards(tp_matrix_shards(
          L, std::make_shared<TpNsGroup>(*comms[size_t(r)], *be, c.mode == TpMode::distributed_exact)));
    const std::vector<float> m_local = local_flat(L, m0);
    std::vector<StateBuffer> state = opt.state();
    size_t k = 0;
    for (size_t t = 0; t < L.local.size(); ++t) {
      const bool matrix = L.local[t].kind == ParamKind::matrix;
      if (matrix) std::memcpy(state[k].data, m_local.data() + L.local[t].offset, L.local[t].numel * sizeof(float));
      k += matrix ? 1 : 2;  // momentum, or AdamW's exp_avg and exp_avg_sq
    }
    RankResult& out = results[size_t(r)];
    out.weights = local_flat(L, w0);
    const std::vector<float> g_local = local_flat(L, g);
    StepContext ctx;
    ctx.muon_momentum = 0.95;
    ctx.compute_stats = true;
    opt.step(out.weights.data(), g_local.data(), ctx);
    out.momentum.assign(L.local_flat, 0.0f);
    k = 0;
    for (size_t t = 0; t < L.local.size(); ++t) {
      const bool matrix = L.local[t].kind == ParamKind::matrix;
      if (matrix) std::memcpy(out.momentum.data() + L.local[t].offset, state[k].data, L.local[t].numel * sizeof(float));
      k += matrix ? 1 : 2;
    }
    out.stats = opt.last_stats();
  });

  const TpLayout L0 = gpt_tp_layout(model, c.tp, 0);
  for (size_t t = 0; t < full.size(); ++t) {
    const TpSplit& s = L0.splits[t];
    if (!s.sharded || full[t].kind != ParamKind::matrix) continue;
    const ParamView& p = full[t];
    const ParamView& q = L0.local[t];
    const Group grp(file, std::string("tp/") + c.name + "/" + p.name);
    grp.attr("mode", std::string(config_name(c.mode)));
    grp.attr("tp", c.tp);
    grp.attr("rows", static_cast<double>(p.shape[0]));
    grp.attr("cols", static_cast<double>(p.shape[1]));
    grp.attr("outer", static_cast<double>(s.outer));
    grp.attr("part", static_cast<double>(s.part));
    grp.attr("inner", static_cast<double>(s.inner));
    grp.attr("local_rows", static_cast<double>(q.shape[0]));
    grp.attr("local_cols", static_cast<double>(q.shape[1]));
    grp.attr("lr", o.lr);
    grp.attr("weight_decay", o.weight_decay);
    grp.attr("momentum", 0.95);
    grp.attr("nesterov", o.nesterov ? 1.0 : 0.0);
    grp.attr("ns_eps", o.ns_eps);
    grp.attr("scale_rule", std::string(config_name(c.scale)));
    grp.attr("split_qkv", c.split_qkv ? 1.0 : 0.0);
    const std::vector<hsize_t> dims = {static_cast<hsize_t>(p.shape[0]), static_cast<hsize_t>(p.shape[1])};
    auto full_of = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + p.offset, v.begin() + p.offset + p.numel);
    };
    grp.data("W", full_of(w0), dims);
    grp.data("G", full_of(g), dims);
    grp.data("M0", full_of(m0), dims);
    std::vector<float> w_new, m_new, rms, ortho;
    for (const RankResult& r : results) {
      w_new.insert(w_new.end(), r.weights.begin() + q.offset, r.weights.begin() + q.offset + q.numel);
      m_new.insert(m_new.end(), r.momentum.begin() + q.offset, r.momentum.begin() + q.offset + q.numel);
      rms.push_back(r.stats[t].update_rms);
      ortho.push_back(r.stats[t].ortho_error);
    }
    const std::vector<hsize_t> per_rank = {static_cast<hsize_t>(c.tp), static_cast<hsize_t>(q.numel)};
    grp.data("W_new", w_new, per_rank);
    grp.data("M_new", m_new, per_rank);
    grp.data("update_rms", rms, {static_cast<hsize_t>(c.tp)});
    grp.data("ortho_error", ortho, {static_cast<hsize_t>(c.tp)});
    grp.data("ns", ns_table(o.ns), {o.ns.size(), 3});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tp_oracle_export OUT.h5\n");
    return 2;
  }
  try {
    const hid_t file =
        checked(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), std::string("create ") + argv[1]);
    // One block of a 64-wide GPT with 4 heads: qkv (192, 64), attn.proj (64, 64), mlp.fc
    // (256, 64), mlp.proj (64, 256); at TP 4 the fc shard is square (64, 64) and the qkv shard
    // wide (48, 64), so the Gram side follows the split, not the shard's shape.
    GPTConfig model;
    model.vocab = 64;
    model.seq_len = 16;
    model.n_layer = 1;
    model.n_head = 4;
    model.n_embd = 64;
    const Case cases[] = {
        {"blockwise_tp2", TpMode::blockwise, 2, MuonScale::shape},
        {"blockwise_tp4", TpMode::blockwise, 4, MuonScale::max_dim},
        {"distributed_tp2", TpMode::distributed, 2, MuonScale::shape},
        {"distributed_tp4", TpMode::distributed, 4, MuonScale::max_dim},
        {"distributed_exact_tp2", TpMode::distributed_exact, 2, MuonScale::shape},
        {"distributed_exact_tp4", TpMode::distributed_exact, 4, MuonScale::spectral},
        {"distributed_split_qkv_tp2", TpMode::distributed, 2, MuonScale::shape, true},
    };
    uint32_t seed = 5000;
    for (const Case& c : cases) tp_case(file, model, c, seed += 10);
    H5Fclose(file);
    std::printf("%s: %zu tensor-parallel cases\n", argv[1], std::size(cases));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tp_oracle_export: %s\n", e.what());
    return 1;
  }
  return 0;
}
