// Parity of the optimizers: Muon (with its AdamW group) and AdamW steps on the CUDA backend equal
// the CPU backend's bit for bit — weights (padding included), every state buffer and every update
// statistic — on matrices wide, tall and square whose sizes are no multiple of any block or tile,
// with ±0, subnormal and large inputs, fp32 and bf16 Newton–Schulz operands, under two launch
// configurations; and the exact reductions behind them (clipping, sums of squares with Inf/NaN).
#include <string>
#include <tuple>
#include <vector>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/optim/clip.hpp"
#include "samebits/core/optim/optimizer.hpp"
#include "samebits/core/optim_kernels.hpp"
#include "unit/test_optim_support.hpp"

namespace sb::test {
namespace {

// Two launch configurations: the defaults, and small odd blocks with another GEMM tile.
const std::vector<CudaLaunchConfig> kLaunches = {{-1, 4, 256}, {3, 1, 96}};

std::vector<ParamView> optim_layout(size_t* flat) {
  return make_layout({{"wide", {37, 53}, ParamKind::matrix},
                      {"bias", {101}, ParamKind::bias},
                      {"tall", {70, 19}, ParamKind::matrix},
                      {"table", {5, 33}, ParamKind::embedding},
                      {"square", {64, 64}, ParamKind::matrix},
                      {"gain", {1}, ParamKind::norm}},
                     flat);
}

// What one backend's optimizer holds after each step.
struct After {
  std::vector<float> weights;             // (flat)
  std::vector<std::vector<float>> state;  // Optimizer::state() order
  std::vector<std::string> state_names;
  std::vector<TensorUpdateStats> stats;  // (tensors)
};

// `steps` steps of `config` on `be` from weights w0 with gradients grads[s]; one After per step.
std::vector<After> run_steps(Backend& be, const OptimConfig& config, Precision precision,
                             const std::vector<ParamView>& layout, const std::vector<float>& w0,
                             const std::vector<std::vector<float>>& grads) {
  const size_t flat = w0.size();
  Tensor w = be.alloc(DType::f32, {static_cast<int64_t>(flat)});
  Tensor g = be.alloc(DType::f32, {static_cast<int64_t>(flat)});
  be.copy_from_host(w.data(), w0.data(), flat * sizeof(float));
  const std::unique_ptr<Optimizer> opt = make_optimizer(config, layout, be, precision);
  std::vector<After> out;
  for (size_t s = 0; s < grads.size(); ++s) {
    be.copy_from_host(g.data(), grads[s].data(), flat * sizeof(float));
    StepContext ctx;
    ctx.step = static_cast<int64_t>(s) + 1;
    ctx.lr_factor = 0.75;
    ctx.muon_momentum = 0.9;
    ctx.compute_stats = true;
    opt->step(w.data_as<float>(), g.data_as<float>(), ctx);
    After a;
    a.weights.resize(flat);
    be.copy_to_host(a.weights.data(), w.data(), flat * sizeof(float));
    for (const StateBuffer& b : opt->state()) {
      a.state.emplace_back(b.numel);
      be.copy_to_host(a.state.back().data(), b.data, b.numel * sizeof(float));
      a.state_names.push_back(b.name);
    }
    a.stats = opt->last_stats();
    out.push_back(std::move(a));
  }
  return out;
}

void check_stat(float gpu, float cpu, const std::string& what) {
  CHECK_MESSAGE(det::bits_of(gpu) == det::bits_of(cpu), what, ": gpu ", gpu, " (0x", std::hex, det::bits_of(gpu),
                ") cpu ", cpu, " (0x", det::bits_of(cpu), std::dec, ")");
}

void check_optimizer(const OptimConfig& config, Precision precision, uint32_t seed) {
  size_t flat = 0;
  const std::vector<ParamView> layout = optim_layout(&flat);
  const std::vector<float> w0 = parity_values(flat, seed, 1e15f);
  // Gradients: step 1 mixed values, step 2 small ones (so the state carries both), step 3 mixed.
  std::vector<std::vector<float>> grads = {parity_values(flat, seed + 1, 1e15f), parity_values(flat, seed + 2, 1.0f),
                                           parity_values(flat, seed + 3, 1e15f)};
  for (const ParamView& p : layout) {  // the trainer's gradients hold zeros in the padding
    const size_t end = p.offset + p.numel;
    const size_t next = (end + kParamAlign - 1) / kParamAlign * kParamAlign;
    for (auto& g : grads)
      std::fill(g.begin() + static_cast<ptrdiff_t>(end), g.begin() + static_cast<ptrdiff_t>(next), 0.0f);
  }
  const auto cpu_backend = make_cpu_backend();
  const std::vector<After> cpu = run_steps(*cpu_backend, config, precision, layout, w0, grads);
  for (const CudaLaunchConfig& launch : kLaunches) {
    const auto gpu_backend = make_parity_gpu(Numerics::deterministic(), launch);
    const std::vector<After> gpu = run_steps(*gpu_backend, config, precision, layout, w0, grads);
    for (size_t s = 0; s < cpu.size(); ++s) {
      const std::string at = "launch " + launch.describe() + ", step " + std::to_string(s + 1) + ", ";
      for (const ParamView& p : layout) {
        const auto first = [&](const std::vector<float>& v) {
          return std::vector<float>(v.begin() + static_cast<ptrdiff_t>(p.offset),
                                    v.begin() + static_cast<ptrdiff_t>(p.offset + p.numel));
        };
        CHECK(same_bits(first(gpu[s].weights), first(cpu[s].weights), at + "weights of " + p.name));
      }
      CHECK(same_bits(gpu[s].weights, cpu[s].weights, at + "the whole flat weights (padding too)"));
      REQUIRE(gpu[s].state_names == cpu[s].state_names);
      for (size_t b = 0; b < cpu[s].state.size(); ++b)
        CHECK(same_bits(gpu[s].state[b], cpu[s].state[b], at + "state " + cpu[s].state_names[b]));
      REQUIRE(gpu[s].stats.size() == cpu[s].stats.size());
      for (size_t t = 0; t < layout.size(); ++t) {
        const std::string n = at + layout[t].name + " ";
        check_stat(gpu[s].stats[t].update_rms, cpu[s].stats[t].update_rms, n + "update_rms");
        check_stat(gpu[s].stats[t].update_weight_ratio, cpu[s].stats[t].update_weight_ratio, n + "update_weight_ratio");
        check_stat(gpu[s].stats[t].ortho_error, cpu[s].stats[t].ortho_error, n + "ortho_error");
      }
    }
  }
}

TEST_CASE("Muon (Nesterov, shape scale) and its AdamW group: GPU equals CPU, 3 steps") {
  require_gpu();
  OptimConfig c;
  c.name = OptimizerName::muon;
  c.weight_decay = 0.05;
  check_optimizer(c, Precision::fp32, 101);
}

TEST_CASE("Muon without Nesterov, moonlight and spectral scales, bf16 Newton–Schulz operands") {
  require_gpu();
  OptimConfig c;
  c.name = OptimizerName::muon;
  c.nesterov = false;
  c.scale = MuonScale::moonlight;
  check_optimizer(c, Precision::bf16, 202);
  c.scale = MuonScale::spectral;
  c.ns_coefficients = NsCoefficients::polar_express;
  check_optimizer(c, Precision::fp32, 303);
}

TEST_CASE("AdamW with decoupled weight decay: GPU equals CPU, 3 steps") {
  require_gpu();
  OptimConfig c;
  c.name = OptimizerName::adamw;
  c.lr = 3e-3;
  c.weight_decay = 0.1;
  check_optimizer(c, Precision::fp32, 404);
}

TEST_CASE("clipping and exact sums of squares: GPU equals CPU") {
  require_gpu();
  const size_t n = 100003;
  for (const CudaLaunchConfig& launch : kLaunches) {
    const auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    OptimKernels& k = gpu->optim_kernels();
    for (const double clip : {0.0, 1e-3, 1e30}) {
      std::vector<float> host = parity_values(n, 7, 1e15f);
      Guarded dev(*gpu, n, host);
      const ClipResult want = clip_grad_norm(host_optim_kernels(), host.data(), n, clip);
      const ClipResult got = clip_grad_norm(k, dev.data(), n, clip);
      const std::string at = "launch " + launch.describe() + ", clip " + std::to_string(clip) + ": ";
      check_stat(got.norm, want.norm, at + "norm");
      check_stat(got.factor, want.factor, at + "factor");
      check_output(dev, host, at + "clipped gradient");
    }
    // Inf and NaN follow ExactSum's rules on both sides; the empty sum is +0.
    std::vector<float> special = parity_values(1000, 8);
    special[17] = det::float_of_bits(0x7f800000u);
    Guarded with_inf(*gpu, special.size(), special);
    CHECK(det::bits_of(k.sum_of_squares(with_inf.data(), special.size()).to_f64()) ==
          det::bits_of(sum_of_squares(special.data(), special.size()).to_f64()));
    special[500] = det::float_of_bits(0xffc00001u);
    Guarded with_nan(*gpu, special.size(), special);
    const det::ExactSum nan_sum = k.sum_of_squares(with_nan.data(), special.size());
    CHECK(det::bits_of(nan_sum.to_f64()) == det::bits_of(sum_of_squares(special.data(), special.size()).to_f64()));
    CHECK(nan_sum.count() == 1000);
    CHECK(det::bits_of(k.sum_of_squares(with_nan.data(), 0).to_f64()) == 0u);
  }
}

}  // namespace
}  // namespace sb::test
