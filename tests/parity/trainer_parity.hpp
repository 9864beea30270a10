// The real sb::Trainer on the CPU backend and on the CUDA backend (run.backend=cuda: model,
// accumulator, clipping and optimizer update all on the GPU), compared step by step: the loss,
// every statistic (QK-clip's maxima included), the gradient and weight fingerprints of every
// tensor — bitwise. On the first
// step that differs, the full states (weights and optimizer buffers) are copied back and the first
// differing element of each tensor is named, with both bit patterns. Used by test_parity_train
// and by parity_train (scripts/gpu-check).
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/parallel/communicator.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::test {

inline std::string hex32(float v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", det::bits_of(v));
  return buf;
}

// A Trainer with its own backend and one-process communicator (destroyed after the Trainer).
struct OwnedTrainer {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Trainer> trainer;
  Trainer& operator*() const { return *trainer; }
  Trainer* operator->() const { return trainer.get(); }
};

// A Trainer for `config` on the given backend (run.backend is set to match); a CUDA backend takes
// `launch` when given, else SAMEBITS_CUDA_LAUNCH / the defaults.
inline OwnedTrainer make_trainer(Config config, Device device, const CudaLaunchConfig* launch = nullptr) {
  config.run.backend = device;
  CudaOptions cuda = CudaOptions::from_environment();
  if (launch != nullptr) cuda.launch = *launch;
  OwnedTrainer t;
  t.backend =
      device == Device::cuda ? make_cuda_backend(to_numerics(config), cuda) : make_cpu_backend(to_numerics(config));
  t.comm = make_local_communicator();
  t.trainer = std::make_unique<Trainer>(config, *t.backend, *t.comm);
  return t;
}

// One line per differing field of two steps' results ("step 3 h.0.attn.qkv.w update_rms: gpu
// 0x... cpu 0x..."); empty when every bit is equal.
inline std::vector<std::string> step_differences(const StepResult& gpu, const StepResult& cpu,
                                                 const std::vector<ParamView>& layout) {
  std::vector<std::string> out;
  const std::string at = "step " + std::to_string(cpu.stats.step) + " ";
  auto scalar = [&](const std::string& what, float g, float c) {
    if (det::bits_of(g) != det::bits_of(c))
      out.push_back(at + what + ": gpu " + hex32(g) + " (" + std::to_string(g) + ") cpu " + hex32(c) + " (" +
                    std::to_string(c) + ")");
  };
  const StepStats &g = gpu.stats, &c = cpu.stats;
  if (g.step != c.step || g.skipped != c.skipped) out.push_back(at + "step number or skip differs");
  scalar("loss", g.loss, c.loss);
  scalar("val_loss", g.val_loss, c.val_loss);
  scalar("grad_norm", g.grad_norm, c.grad_norm);
  scalar("clip_scale", g.clip_scale, c.clip_scale);
  scalar("loss_scale", g.loss_scale, c.loss_scale);
  scalar("leaf_sq_mean", g.leaf_sq_mean, c.leaf_sq_mean);
  scalar("batch_sq", g.batch_sq, c.batch_sq);
  scalar("grad_sq_est", g.grad_sq_est, c.grad_sq_est);
  scalar("trace_est", g.trace_est, c.trace_est);
  scalar("noise_scale", g.noise_scale, c.noise_scale);
  if (g.qk_max_logits.size() != c.qk_max_logits.size() || g.qk_clipped != c.qk_clipped)
    out.push_back(at + "QK-clip: " + std::to_string(g.qk_max_logits.size()) + " maxima, " +
                  std::to_string(g.qk_clipped) + " clipped on the gpu; " + std::to_string(c.qk_max_logits.size()) +
                  ", " + std::to_string(c.qk_clipped) + " on the cpu");
  for (size_t i = 0; i < c.qk_max_logits.size() && i < g.qk_max_logits.size(); ++i)
    scalar("qk_max_logit[" + std::to_string(i) + "]", g.qk_max_logits[i], c.qk_max_logits[i]);
  if (g.tensors.size() != c.tensors.size()) out.push_back(at + "per-tensor statistics count differs");
  for (size_t t = 0; t < c.tensors.size() && t < g.tensors.size(); ++t) {
    const TensorStats &a = g.tensors[t], &b = c.tensors[t];
    const std::string n = layout[t].name + " ";
    scalar(n + "grad_norm", a.grad_norm, b.grad_norm);
    scalar(n + "grad_max", a.grad_max, b.grad_max);
    scalar(n + "grad_mean", a.grad_mean, b.grad_mean);
    scalar(n + "update_rms", a.update_rms, b.update_rms);
    scalar(n + "update_weight_ratio", a.update_weight_ratio, b.update_weight_ratio);
    scalar(n + "ortho_error", a.ortho_error, b.ortho_error);
    scalar(n + "leaf_sq_mean", a.leaf_sq_mean, b.leaf_sq_mean);
    scalar(n + "batch_sq", a.batch_sq, b.batch_sq);
    scalar(n + "grad_sq_est", a.grad_sq_est, b.grad_sq_est);
    scalar(n + "trace_est", a.trace_est, b.trace_est);
    scalar(n + "noise_scale", a.noise_scale, b.noise_scale);
  }
  auto prints = [&](const char* what, const std::vector<uint64_t>& pg, const std::vector<uint64_t>& pc) {
    if (pg.size() != pc.size()) {
      out.push_back(at + what + " fingerprint count differs");
      return;
    }
    for (size_t t = 0; t < pc.size(); ++t) {
      if (pg[t] != pc[t])
        out.push_back(at + layout[t].name + " " + what + " fingerprint: gpu " + det::fingerprint_hex(pg[t]) + " cpu " +
                      det::fingerprint_hex(pc[t]));
    }
  };
  prints("gradient", gpu.grad_fingerprints, cpu.grad_fingerprints);
  prints("weights", gpu.param_fingerprints, cpu.param_fingerprints);
  return out;
}

// The first differing element of each weight tensor and optimizer buffer of two states, with
// both bit patterns; empty when they are bitwise equal.
inline std::vector<std::string> state_differences(const TrainerState& gpu, const TrainerState& cpu,
                                                  const std::vector<ParamView>& layout) {
  std::vector<std::string> out;
  auto first = [&](const std::string& what, const float* g, const float* c, size_t n) {
    size_t count = 0, at = 0;
    for (size_t i = 0; i < n; ++i) {
      if (det::bits_of(g[i]) != det::bits_of(c[i]) && count++ == 0) at = i;
    }
    if (count != 0)
      out.push_back(what + ": " + std::to_string(count) + " of " + std::to_string(n) +
                    " elements differ; first at element " + std::to_string(at) + ": gpu " + hex32(g[at]) + " (" +
                    std::to_string(g[at]) + ") cpu " + hex32(c[at]) + " (" + std::to_string(c[at]) + ")");
  };
  if (gpu.weights.size() != cpu.weights.size() || gpu.optimizer.size() != cpu.optimizer.size()) {
    out.push_back("the states differ in size");
    return out;
  }
  for (const ParamView& p : layout)
    first("weights " + p.name, gpu.weights.data() + p.offset, cpu.weights.data() + p.offset, p.numel);
  first("weights (whole flat buffer, padding included)", gpu.weights.data(), cpu.weights.data(), cpu.weights.size());
  for (size_t b = 0; b < cpu.optimizer.size(); ++b) {
    const StateArray &g = gpu.optimizer[b], &c = cpu.optimizer[b];
    if (g.name != c.name || g.data.size() != c.data.size()) {
      out.push_back("optimizer buffer " + std::to_string(b) + " is " + g.name + " on the gpu, " + c.name +
                    " on the cpu");
      continue;
    }
    first("optimizer " + c.name, g.data.data(), c.data.data(), c.data.size());
  }
  return out;
}

// Trains `cpu` and `gpu` side by side for `steps` steps; prints a line per step when `print`.
// Returns every difference found: the fields of every differing step, and the element-level
// state differences at the first one.
inline std::vector<std::string> compare_trainers(Trainer& gpu, Trainer& cpu, int steps, bool print) {
  std::vector<std::string> all;
  bool state_reported = false;
  const std::vector<ParamView>& layout = cpu.model().params();
  for (int s = 0; s < steps; ++s) {
    const StepResult c = cpu.step();
    const StepResult g = gpu.step();
    const std::vector<std::string> diff = step_differences(g, c, layout);
    uint64_t wc = 0;
    for (uint64_t f : c.param_fingerprints) wc = wc * 0x100000001b3ull ^ f;
    if (print)
      std::printf("parity_train: step %4lld  loss %.6f  weights %s  %s\n", static_cast<long long>(c.stats.step),
                  static_cast<double>(c.stats.loss), det::fingerprint_hex(wc).c_str(),
                  diff.empty() ? "identical" : ("DIFFERENT (" + std::to_string(diff.size()) + " fields)").c_str());
    all.insert(all.end(), diff.begin(), diff.end());
    if (!diff.empty() && !state_reported) {
      state_reported = true;
      const std::vector<std::string> st = state_differences(gpu.export_state(), cpu.export_state(), layout);
      for (const std::string& line : st) all.push_back("step " + std::to_string(c.stats.step) + " " + line);
    }
  }
  return all;
}

}  // namespace sb::test
