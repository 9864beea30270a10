// Muon with an AdamW group (muon.hpp). Per owned matrix: momentum and Newton–Schulz input
// (ops/muon.hpp), NewtonSchulz on the backend (per Q/K/V block under split_qkv), NorMuon's row
// steps when on, then the decayed step (cautious when on); the other tensors take AdamW. The
// elementwise loops run where the backend keeps its memory (optim_kernels.hpp), on independent
// elements (any thread count or launch). Every tensor's update reads and writes only its own
// weights, gradient and state, so the order of tensors is free: on the CPU with canonical GEMMs
// the matrices go to the OpenMP threads whole (largest Newton–Schulz cost first, each on one
// thread with its own scratch; the GEMMs and loops inside run on that thread): the same
// operations as on one thread, so the same bits for any thread count and schedule, without a
// fork/join per small GEMM and loop.
#include "samebits/core/optim/muon.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <string>

#include "normuon.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/schedule.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"
#include "tensor_state.hpp"

namespace sb {

using optim_detail::TensorState;

MuonOptions muon_options(const OptimConfig& optim) {
  MuonOptions o;
  o.lr = optim.lr;
  o.weight_decay = optim.weight_decay;
  o.nesterov = optim.nesterov;
  o.momentum_form = optim.momentum_form;
  o.ns = ns_schedule(optim);
  o.ns_eps = optim.ns_eps;
  o.scale = optim.scale;
  o.adam = {optim.adam_lr, optim.weight_decay, optim.adam_betas, optim.adam_eps};
  o.extra_scale = optim.extra_scale;
  o.split_qkv = optim.split_qkv;
  o.cautious_wd = optim.cautious_wd;
  o.normuon = optim.name == OptimizerName::normuon;
  o.normuon_beta2 = optim.normuon_beta2;
  return o;
}

bool is_fused_qkv(const ParamView& p) {
  const std::string suffix = ".attn.qkv.w";
  return p.kind == ParamKind::matrix && p.shape.size() == 2 && p.shape[0] == 3 * p.shape[1] &&
         p.name.size() >= suffix.size() && p.name.compare(p.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double muon_scale(MuonScale rule, int64_t rows, int64_t cols) {
  const double r = static_cast<double>(rows), c = static_cast<double>(cols);
  switch (rule) {
    case MuonScale::shape: return sqrt_f64(std::max(1.0, r / c));
    case MuonScale::moonlight: return 0.2 * sqrt_f64(std::max(r, c));
    case MuonScale::spectral:
    case MuonScale::unit_rms: return sqrt_f64(r / c);
    case MuonScale::max_dim: return sqrt_f64(std::max(r, c));
    case MuonScale::none: return 1.0;
  }
  SB_FAIL("muon_scale: unknown scale rule ", static_cast<int>(rule));
}

namespace {

std::vector<std::vector<std::string>> state_kinds(const std::vector<ParamView>& params, bool normuon) {
  std::vector<std::vector<std::string>> kinds;
  for (const ParamView& p : params) {
    if (p.kind == ParamKind::matrix) {
      SB_CHECK(p.shape.size() == 2, "Muon: matrix tensor ", p.name, " has shape ", shape_string(p.shape),
               "; expected two dimensions");
      kinds.push_back(normuon ? std::vector<std::string>{"momentum", "second_moment"}
                              : std::vector<std::string>{"momentum"});
    } else {
      kinds.push_back({"exp_avg", "exp_avg_sq"});
    }
  }
  return kinds;
}

// The buffers' lengths: numel, except NorMuon's second moment (one value per row).
std::vector<std::vector<size_t>> state_sizes(const std::vector<ParamView>& params, bool normuon) {
  std::vector<std::vector<size_t>> sizes;
  for (const ParamView& p : params) {
    if (p.kind == ParamKind::matrix && normuon) sizes.push_back({p.numel, static_cast<size_t>(p.shape[0])});
    else if (p.kind == ParamKind::matrix) sizes.push_back({p.numel});
    else sizes.push_back({p.numel, p.numel});
  }
  return sizes;
}

// The larger of two ortho errors, NaN when either is (an order-free max over blocks).
float max_or_nan(float a, float b) { return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b); }

size_t largest_matrix(const std::vector<ParamView>& params) {
  size_t n = 1;
  for (const ParamView& p : params)
    if (p.kind == ParamKind::matrix) n = std::max(n, p.numel);
  return n;
}

// One worker's scratch: Newton–Schulz, NorMuon's rows, U and X of its current matrix.
struct MuonLane {
  MuonLane(Backend& backend, Precision precision, size_t largest)
      : ns(backend, precision),
        rows(backend),
        input(backend.alloc(DType::f32, {static_cast<int64_t>(largest)})),
        ortho(backend.alloc(DType::f32, {static_cast<int64_t>(largest)})) {}
  NewtonSchulz ns;
  optim_detail::NorMuonRows rows;
  Tensor input;  // U of the current matrix (rows, cols)
  Tensor ortho;  // its Newton–Schulz output X (rows, cols)
};

// split_qkv's blocks of p: 3 for a fused attn.qkv.w, judged on the full matrix of a shard.
int qkv_blocks(const MuonOptions& options, const ParamView& p, const MatrixShard& shard) {
  if (!options.split_qkv) return 1;
  ParamView full = p;
  if (shard.group) full.shape = {shard.rows, shard.cols};
  return is_fused_qkv(full) ? 3 : 1;
}

// Muon's update of matrix i (momentum, Newton–Schulz, the decayed step) with lane's scratch; the
// GEMMs and loops run on the calling thread's team. A sharded matrix (shard.group set) takes
// Newton–Schulz over its group and the full matrix's scale rule and statistics.
void update_matrix(TensorState& st, const MuonOptions& options, size_t i, float* weights, const float* grads,
                   const StepContext& ctx, float decay, MuonLane& lane, const MatrixShard& shard) {
  const ParamView& p = st.params()[i];
  float* const w = weights + p.offset;
  const float* const g = grads + p.offset;
  UpdateSums sums;
  UpdateSums* const sums_or_null = ctx.compute_stats ? &sums : nullptr;
  const double lr = scheduled_lr(options.lr, ctx.lr_factor);
  const int rows = static_cast<int>(p.shape[0]), cols = static_cast<int>(p.shape[1]);
  float* const u = lane.input.data_as<float>();
  float* const x = lane.ortho.data_as<float>();
  const ops::MuonMomentum momentum{static_cast<float>(ctx.muon_momentum), static_cast<float>(1.0 - ctx.muon_momentum),
                                   options.momentum_form == MomentumForm::lerp, options.nesterov};
  st.kernels().muon_momentum(st.buffer(i, 0), u, g, p.numel, momentum);
  // split_qkv: the Q, K and V blocks of rows, each (C, C), orthogonalised on their own.
  const int blocks = qkv_blocks(options, p, shard);
  const int block_rows = rows / blocks;
  const size_t block = static_cast<size_t>(block_rows) * static_cast<size_t>(cols);
  float ortho_error = 0.0f;
  for (int b = 0; b < blocks; ++b) {
    float e = std::numeric_limits<float>::quiet_NaN();
    float* const e_or_null = ctx.compute_stats ? &e : nullptr;
    if (shard.group) {
      lane.ns.run_shard(u + b * block, x + b * block, block_rows, cols, shard, options.ns, options.ns_eps, e_or_null);
    } else {
      lane.ns.run(u + b * block, x + b * block, block_rows, cols, options.ns, options.ns_eps, e_or_null);
    }
    ortho_error = b == 0 ? e : max_or_nan(ortho_error, e);
  }
  const int64_t scale_rows = shard.group ? shard.rows / blocks : block_rows;
  const int64_t scale_cols = shard.group ? shard.cols : cols;
  const double step64 = lr * (muon_scale(options.scale, scale_rows, scale_cols) * options.extra_scale);
  const float step = static_cast<float>(step64);
  if (options.normuon) {
    const float* row_step = lane.rows.row_steps(x, rows, cols, st.buffer(i, 1), options.normuon_beta2, step64);
    st.kernels().muon_apply_rows(w, x, rows, cols, decay, step, row_step, options.cautious_wd, sums_or_null);
  } else if (options.cautious_wd) {
    st.kernels().muon_apply_rows(w, x, rows, cols, decay, step, nullptr, true, sums_or_null);
  } else {
    st.kernels().muon_apply(w, x, p.numel, decay, step, sums_or_null);
  }
  if (shard.group && ctx.compute_stats) {  // the full matrix's sums (exact)
    sums.delta_sq = shard.group->sum_exact(sums.delta_sq);
    sums.weight_sq = shard.group->sum_exact(sums.weight_sq);
  }
  const size_t numel = shard.group ? static_cast<size_t>(shard.rows * shard.cols) : p.numel;
  st.stats()[i] = ctx.compute_stats ? sums.finish(numel, ortho_error) : optim_detail::not_computed();
}

}  // namespace

class Muon::Impl {
 public:
  Impl(const std::vector<ParamView>& params, Backend& be, Precision prec, bool normuon)
      : state(params, be, state_kinds(params, normuon), state_sizes(params, normuon)),
        backend(be),
        precision(prec),
        largest(largest_matrix(params)),
        // Matrices on threads: host memory (a GEMM inside the parallel region runs on its thread,
        // canonical or vendor); not NorMuon, whose row steps count host traffic on the backend
        // (one shared counter).
        host_threads(be.device() == Device::cpu && !normuon) {
    lanes.push_back(std::make_unique<MuonLane>(backend, precision, largest));
  }
  // At least n lanes (created before a parallel region, never inside one).
  void reserve_lanes(size_t n) {
    while (lanes.size() < n) lanes.push_back(std::make_unique<MuonLane>(backend, precision, largest));
  }

  TensorState state;
  Backend& backend;
  Precision precision;
  size_t largest;
  bool host_threads;
  std::vector<std::unique_ptr<MuonLane>> lanes;
  std::vector<MatrixShard> shards;  // (tensors) set_shards; empty: every matrix whole
  bool sharded = false;             // some matrix is a shard: one matrix after another
  const MatrixShard& shard(size_t i) const {
    static const MatrixShard whole;
    return shards.empty() ? whole : shards[i];
  }
};

Muon::Muon(const std::vector<ParamView>& params, Backend& backend, Precision precision, const MuonOptions& options)
    : options_(options) {
  SB_CHECK(!options_.ns.empty(), "Muon: expected at least one Newton–Schulz step, got none");
  impl_ = std::make_unique<Impl>(params, backend, precision, options_.normuon);
}

Muon::~Muon() = default;

void Muon::step(float* weights, const float* grads, const StepContext& ctx) {
  TensorState& st = impl_->state;
  const std::vector<ParamView>& params = st.params();
  const double lr = scheduled_lr(options_.lr, ctx.lr_factor);
  const float decay = static_cast<float>(1.0 - lr * options_.weight_decay);
  std::vector<size_t> matrices;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!st.owned(i)) continue;
    const ParamView& p = params[i];
    if (p.kind == ParamKind::matrix) {
      matrices.push_back(i);
      continue;
    }
    UpdateSums sums;
    const ops::AdamWConstants k = adamw_constants(options_.adam, ctx.lr_factor, ctx.step, decays_weight(p));
    const trace::Scope site(impl_->backend, "adamw ", -1, p.name.c_str());
    st.kernels().adamw(weights + p.offset, grads + p.offset, st.buffer(i, 0), st.buffer(i, 1), p.numel, k,
                       ctx.compute_stats ? &sums : nullptr);
    st.stats()[i] = ctx.compute_stats ? sums.finish(p.numel, std::numeric_limits<float>::quiet_NaN())
                                      : optim_detail::not_computed();
  }
  // A traced step updates the matrices in order on this thread (its stream has one order).
  // So does one with sharded matrices (their groups' collectives in layout order on every rank).
  const int threads = impl_->host_threads && impl_->backend.tracer() == nullptr && !impl_->sharded
                          ? std::min(omp_get_max_threads(), static_cast<int>(matrices.size()))
                          : 1;
  if (threads <= 1) {
    for (const size_t i : matrices) {
      const trace::Scope site(impl_->backend, "muon newton_schulz ", -1, params[i].name.c_str());
      update_matrix(st, options_, i, weights, grads, ctx, decay, *impl_->lanes[0], impl_->shard(i));
    }
    return;
  }
  // Largest Newton–Schulz cost first (a stable order: the schedule only balances the threads).
  const std::vector<double> cost = update_cost();
  std::stable_sort(matrices.begin(), matrices.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  impl_->reserve_lanes(static_cast<size_t>(threads));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  const ptrdiff_t count = static_cast<ptrdiff_t>(matrices.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (ptrdiff_t m = 0; m < count; ++m) {
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    try {
      update_matrix(st, options_, matrices[size_t(m)], weights, grads, ctx, decay, *impl_->lanes[t],
                    impl_->shard(matrices[size_t(m)]));
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<StateBuffer> Muon::state() { return impl_->state.state(); }
size_t Muon::state_bytes() const { return impl_->state.bytes(); }
const std::vector<TensorUpdateStats>& Muon::last_stats() const { return impl_->state.stats(); }
void Muon::set_owned(const std::vector<bool>& owned) { impl_->state.set_owned(owned); }

void Muon::set_shards(std::vector<MatrixShard> shards) {
  const std::vector<ParamView>& params = impl_->state.params();
  SB_CHECK(shards.size() == params.size(), "Muon::set_shards: ", shards.size(), " shards for ", params.size(),
           " tensors");
  for (size_t i = 0; i < params.size(); ++i) {
    const MatrixShard& s = shards[i];
    if (!s.group) continue;
    const ParamView& p = params[i];
    SB_CHECK(!options_.normuon,
             "config optim.name=normuon with a Newton–Schulz over shards ("
             "optim.tp_mode=distributed…): NorMuon's per-row state is not split yet; use optim.name=muon");
    const int64_t size = s.group->size();
    const bool fits = p.kind == ParamKind::matrix && p.shape.size() == 2 &&
                      (s.y == Trans::yes ? p.shape[0] * size == s.rows && p.shape[1] == s.cols
                                         : p.shape[0] == s.rows && p.shape[1] * size == s.cols);
    SB_CHECK(fits, "Muon::set_shards: tensor ", p.name, " of shape ", shape_string(p.shape), " is not a ",
             s.y == Trans::yes ? "row" : "column", " shard of (", s.rows, ", ", s.cols, ") over ", size, " ranks");
    impl_->sharded = true;
  }
  impl_->shards = std::move(shards);
}

std::vector<double> Muon::update_cost() const { return muon_update_cost(options_, impl_->state.params()); }

std::vector<double> muon_update_cost(const MuonOptions& options, const std::vector<ParamView>& params) {
  std::vector<double> cost;
  for (const ParamView& p : params) {
    const int64_t blocks = options.split_qkv && is_fused_qkv(p) ? 3 : 1;
    cost.push_back(p.kind == ParamKind::matrix
                       ? static_cast<double>(blocks) * newton_schulz_flops(p.shape[0] / blocks, p.shape[1],
                                                                           static_cast<int64_t>(options.ns.size()))
                       : static_cast<double>(p.numel));
  }
  return cost;
}

}  // namespace sb
