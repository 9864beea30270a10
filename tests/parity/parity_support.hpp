// Helpers of the parity tests (tests/parity, label gpu): the CPU backend against the CUDA backend,
// bitwise, under several launch configurations; device buffers inside sentinel guard bands that
// must come back untouched; inputs that mix ordinary values with ±0, subnormals and large values.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "support/gpu.hpp"

namespace sb::test {

// The parity tests' tiny GPT: odd sizes (vocabulary 67, 19 tokens, 3 heads of 16) so that every
// kernel meets partial tiles and warps; 4 leaves of 2 sequences, 20 steps.
inline Config parity_gpt_config() {
  Config c;
  c.model.vocab = 67;
  c.model.seq_len = 19;
  c.model.n_layer = 2;
  c.model.n_head = 3;
  c.model.n_embd = 48;
  c.data.leaf_size = 2;
  c.data.leaves = 4;
  c.data.synthetic.doc_len = 40;
  c.train.steps = 20;
  c.train.warmup = 3;
  c.train.eval_every = 0;
  c.run.threads = 2;
  return c;
}

// Launch configurations that must all give the CPU's bits: every GEMM tile, 1..32 rows per block,
// block sizes from one warp to 1024 threads (some not powers of two).
inline std::vector<CudaLaunchConfig> parity_launches() {
  return {{-1, 4, 256}, {0, 1, 32}, {1, 32, 1024}, {2, 3, 96}, {3, 8, 64}, {4, 2, 128}, {5, 5, 160}};
}

inline std::unique_ptr<Backend> make_parity_gpu(Numerics numerics, const CudaLaunchConfig& launch) {
  CudaOptions options;
  options.launch = launch;
  return make_cuda_backend(numerics, options, 0);
}

// Sentinels: the guard bands, and the interior of an output buffer before the op writes it (both
// NaN patterns no op produces).
constexpr size_t kGuard = 64;  // floats on each side: 256 bytes, so the interior stays aligned
constexpr uint32_t kGuardBits = 0x7fa5a5a5u;
constexpr uint32_t kUnwrittenBits = 0xffb1b1b1u;

// n floats of backend memory between two guard bands.
class Guarded {
 public:
  // Interior = `init`, or the unwritten sentinel when init is empty (an output).
  Guarded(Backend& be, size_t n, const std::vector<float>& init = {}) : be_(be), n_(n) {
    REQUIRE((init.empty() || init.size() == n));
    std::vector<float> host(n + 2 * kGuard, det::float_of_bits(kGuardBits));
    for (size_t i = 0; i < n; ++i) host[kGuard + i] = init.empty() ? det::float_of_bits(kUnwrittenBits) : init[i];
    t_ = be.alloc(DType::f32, {static_cast<int64_t>(host.size())});
    be.copy_from_host(t_.data(), host.data(), host.size() * sizeof(float));
  }
  float* data() { return t_.data_as<float>() + kGuard; }
  size_t size() const { return n_; }
  std::vector<float> all() {
    std::vector<float> host(n_ + 2 * kGuard);
    be_.copy_to_host(host.data(), t_.data(), host.size() * sizeof(float));
    return host;
  }
  std::vector<float> interior() {
    const std::vector<float> a = all();
    return std::vector<float>(a.begin() + kGuard, a.end() - kGuard);
  }
  // Both guard bands hold their sentinel bits.
  bool guards_intact() {
    const std::vector<float> a = all();
    for (size_t i = 0; i < kGuard; ++i) {
      if (det::bits_of(a[i]) != kGuardBits || det::bits_of(a[kGuard + n_ + i]) != kGuardBits) return false;
    }
    return true;
  }

 private:
  Backend& be_;
  size_t n_;
  Tensor t_;
};

// int32 values in backend memory (token ids, targets).
inline Tensor device_ints(Backend& be, const std::vector<int32_t>& v) {
  Tensor t = be.alloc(DType::i32, {static_cast<int64_t>(v.size())});
  be.copy_from_host(t.data(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

// n inputs: mostly uniform in [-1, 1), with ±0, subnormals, values up to ±`large`, and small
// integers mixed in at random places (fixed seed).
inline std::vector<float> parity_values(size_t n, uint32_t seed, float large = 1e15f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 39), small(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) {
    switch (kind(rng)) {
      case 0: x = 0.0f; break;
      case 1: x = -0.0f; break;
      case 2: x = u(rng) * 1e-40f; break;         // subnormal
      case 3: x = det::float_of_bits(1u); break;  // the smallest subnormal
      case 4: x = u(rng) * large; break;
      case 5: x = static_cast<float>(small(rng)); break;
      default: x = u(rng); break;
    }
  }
  return v;
}

// Bitwise equality; on a difference, reports its count and the first one.
inline bool same_bits(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  REQUIRE(gpu.size() == cpu.size());
  size_t diff = 0, first = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (det::bits_of(gpu[i]) != det::bits_of(cpu[i])) {
      if (diff == 0) first = i;
      ++diff;
    }
  }
  if (diff != 0) {
    MESSAGE(what, ": ", diff, " of ", cpu.size(), " differ; first at ", first, ": gpu ", gpu[first], " (0x", std::hex,
            det::bits_of(gpu[first]), ") cpu ", cpu[first], " (0x", det::bits_of(cpu[first]), std::dec, ")");
  }
  return diff == 0;
}

// Checks the output came back equal to the CPU's and its guard bands untouched.
inline void check_output(Guarded& gpu, const std::vector<float>& cpu, const std::string& what) {
  CHECK_MESSAGE(same_bits(gpu.interior(), cpu, what), what);
  CHECK_MESSAGE(gpu.guards_intact(), what, ": a guard band was overwritten");
}

}  // namespace sb::test
