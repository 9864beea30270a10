// The CUDA backend's plumbing: launch-configuration parsing and validation, device selection
// errors, zero-filled 256-byte-aligned allocations, copies, the stream accessor, and the cuRAND
// vendor initialisation (cuRAND's normals are not samebits' normals: statistics only). Exits 77
// without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/philox.hpp"
#include "support/curand_init.cuh"
#include "support/gpu.hpp"

namespace {

TEST_CASE("launch configurations parse, validate and describe themselves") {
  sb::test::require_gpu();
  const sb::CudaLaunchConfig c = sb::CudaLaunchConfig::parse("threads=128,gemm=2,rows=3");
  CHECK(c.gemm_tile == 2);
  CHECK(c.row_warps == 3);
  CHECK(c.block_threads == 128);
  CHECK(sb::CudaLaunchConfig::parse("gemm=auto").gemm_tile == -1);
  CHECK(c.describe() == "gemm=2 rows=3 threads=128");
  CHECK_THROWS_AS(sb::CudaLaunchConfig::parse("tile=1"), sb::Error);
  CHECK_THROWS_AS(sb::CudaLaunchConfig::parse("threads=100"), sb::Error);
  CHECK_THROWS_AS(sb::CudaLaunchConfig::parse("rows=33"), sb::Error);
  CHECK_THROWS_AS(sb::CudaLaunchConfig::parse("gemm=99"), sb::Error);
  CHECK_THROWS_AS(sb::CudaLaunchConfig::parse("gemm"), sb::Error);
  CHECK(sb::cuda_gemm_tiles().size() == 9);
}

TEST_CASE("backend plumbing: device errors, zero-filled aligned memory, copies, stream") {
  sb::test::require_gpu();
  CHECK_THROWS_AS(sb::make_cuda_backend(sb::Numerics::deterministic(), sb::cuda_device_count()), sb::Error);
  auto be = sb::make_cuda_backend();
  CHECK(be->device() == sb::Device::cuda);
  MESSAGE(be->describe());
  CHECK(sb::cuda_stream(*be) != nullptr);
  auto cpu = sb::make_cpu_backend();
  CHECK_THROWS_AS(sb::cuda_stream(*cpu), sb::Error);
  sb::Tensor t = be->alloc(sb::DType::f32, {1000});
  CHECK(reinterpret_cast<uintptr_t>(t.data()) % 256 == 0);
  std::vector<float> host(1000, 1.0f);
  be->copy_to_host(host.data(), t.data(), t.bytes());
  for (float x : host) REQUIRE(x == 0.0f);
  std::vector<float> src(1000);
  for (int i = 0; i < 1000; ++i) src[i] = static_cast<float>(i) * 0.5f;
  be->copy_from_host(t.data(), src.data(), t.bytes());
  sb::Tensor u = be->alloc(sb::DType::f32, {1000});
  be->copy(u.data(), t.data(), t.bytes());
  be->zero(t.data(), 10 * sizeof(float));
  be->copy_to_host(host.data(), u.data(), u.bytes());
  CHECK(host == src);
  be->copy_to_host(host.data(), t.data(), t.bytes());
  for (int i = 0; i < 1000; ++i) REQUIRE(host[i] == (i < 10 ? 0.0f : src[i]));
  sb::Tensor empty = be->alloc(sb::DType::f32, {0});
  CHECK(empty.defined());
}

TEST_CASE("cuRAND vendor initialisation: GPT::init's layout, cuRAND's normal draws") {
  sb::test::require_gpu();
  auto be = sb::make_cuda_backend();
  sb::GPTConfig cfg;
  cfg.vocab = 512;
  cfg.n_layer = 1;
  sb::GPT model(cfg, 1, *be);
  sbt::curand_init_gpt(model, 1234);
  std::vector<float> w(model.flat_size());
  be->copy_to_host(w.data(), model.weights().data(), w.size() * sizeof(float));
  for (const sb::ParamView& p : model.params()) {
    const float* x = w.data() + p.offset;
    if (p.init_std == 0.0f) {
      for (size_t i = 0; i < p.numel; ++i) REQUIRE(x[i] == p.init_value);
      continue;
    }
    double sum = 0, sq = 0;
    for (size_t i = 0; i < p.numel; ++i) {
      REQUIRE(std::isfinite(x[i]));
      sum += x[i];
      sq += static_cast<double>(x[i]) * x[i];
    }
    const double n = static_cast<double>(p.numel), sd = std::sqrt(sq / n - (sum / n) * (sum / n));
    CHECK_MESSAGE(std::fabs(sd / p.init_std - 1.0) < 0.1, p.name, ": sample std ", sd, " vs ", p.init_std);
    CHECK_MESSAGE(std::fabs(sum / n) < 5.0 * p.init_std / std::sqrt(n), p.name, ": sample mean ", sum / n);
  }
  // The draws are cuRAND's, not samebits': the first wte element differs from GPT::init's.
  const sb::ParamView& wte = model.param("wte");
  CHECK(w[wte.offset] != wte.init_std * sb::det::philox_normal(1234, sb::det::stream_of("wte"), 0));
}

}  // namespace
