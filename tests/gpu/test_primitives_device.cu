// The determinism primitives on the device: each runs in kernels over >= 10^6
// inputs and must give the host's bits exactly — samebits math, the fp formats, Philox (and
// cuRAND's device API stream), the 32-lane row reductions (scalar form and warp shuffles), the
// fixed-point accumulator, ExactSum and the canonical dot. Exits 77 without a GPU.
#include <curand_kernel.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/lane32_warp.cuh"
#include "samebits/core/ops/matmul.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/exact_sum.hpp"
#include "samebits/det/fixed_accumulator.hpp"
#include "samebits/det/fixed_point.hpp"
#include "samebits/det/fp_formats.hpp"
#include "samebits/det/lane32.hpp"
#include "samebits/det/math.hpp"
#include "samebits/det/philox.hpp"
#include "support/gpu.hpp"

namespace {

using sb::det::bits_of;
using sb::det::float_of_bits;

constexpr int kThreads = 256;
constexpr int64_t kMillion = int64_t{1} << 20;

// Device memory of n T's, freed on scope exit.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { SB_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T))); }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    SB_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() { return p_; }
  std::vector<T> host() const {
    std::vector<T> out(n_);
    SB_CUDA_CHECK(cudaMemcpy(out.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void sync_and_check() {
  SB_CUDA_CHECK(cudaGetLastError());
  SB_CUDA_CHECK(cudaDeviceSynchronize());
}

// Bitwise equality of two arrays of trivially copyable values; reports the first difference.
template <class T>
int64_t count_differences(const std::vector<T>& device, const std::vector<T>& host, const char* what) {
  REQUIRE(device.size() == host.size());
  int64_t diff = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    if (std::memcmp(&device[i], &host[i], sizeof(T)) != 0) {
      if (diff == 0) MESSAGE((std::string(what) + ": first difference at element " + std::to_string(i)));
      ++diff;
    }
  }
  return diff;
}

// As count_differences for fp32 results, but two NaNs count as equal: x86 and NVIDIA differ in
// the NaN an invalid operation generates (0xffc00000 vs 0x7fffffff) and in payload propagation,
// and the contract leaves NaN payloads open (docs/CONTRACT.md). Reports how many NaN pairs differ.
int64_t count_differences_nan_equal(const std::vector<float>& device, const std::vector<float>& host,
                                    const std::string& what) {
  REQUIRE(device.size() == host.size());
  int64_t diff = 0, nan_pairs = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    if (std::memcmp(&device[i], &host[i], sizeof(float)) == 0) continue;
    if (device[i] != device[i] && host[i] != host[i]) {
      ++nan_pairs;
      continue;
    }
    if (diff == 0)
      MESSAGE((what + ": first difference at element " + std::to_string(i) + ": device " +
               std::to_string(bits_of(device[i])) + ", host " + std::to_string(bits_of(host[i]))));
    ++diff;
  }
  MESSAGE((what + ": " + std::to_string(nan_pairs) + " NaN results with other NaN bits"));
  return diff;
}

// 2^20 fp32 bit patterns spread over all 2^32 (low bits jittered) and the special values.
std::vector<float> spread_inputs() {
  std::vector<float> x;
  x.reserve(kMillion + 64);
  for (int64_t i = 0; i < kMillion; ++i) {
    const uint64_t b = static_cast<uint64_t>(i) * 4096 + (static_cast<uint64_t>(i) * 0x9e3779b1ull) % 4096;
    x.push_back(float_of_bits(static_cast<uint32_t>(b)));
  }
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu,
                     0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x3f800000u,
                     0xbf800000u, 0x42b17218u, 0xc2cff1b5u, 0x49800000u})
    x.push_back(float_of_bits(b));
  return x;
}

enum class Fn { exp, log, tanh, erf, sin, cos, cos_2pi };
constexpr Fn kFns[] = {Fn::exp, Fn::log, Fn::tanh, Fn::erf, Fn::sin, Fn::cos, Fn::cos_2pi};
const char* fn_name(Fn f) {
  const char* names[] = {"exp", "log", "tanh", "erf", "sin", "cos", "cos_2pi"};
  return names[static_cast<int>(f)];
}

__host__ __device__ float eval(Fn f, float x) {
  switch (f) {
    case Fn::exp: return sb::det::exp(x);
    case Fn::log: return sb::det::log(x);
    case Fn::tanh: return sb::det::tanh(x);
    case Fn::erf: return sb::det::erf(x);
    case Fn::sin: return sb::det::sin(x);
    case Fn::cos: return sb::det::cos(x);
    case Fn::cos_2pi: return sb::det::cos_2pi(x);
  }
  return 0.0f;
}

__global__ void math_kernel(float* y, const float* x, int64_t n, Fn f) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = eval(f, x[i]);
}

TEST_CASE("samebits math gives the host's bits on the device") {
  sb::test::require_gpu();
  std::vector<float> x = spread_inputs();
  for (Fn f : kFns) {
    std::vector<float> in = x;
    if (f == Fn::cos_2pi)  // its domain (0, 1]
      for (float& v : in) v = float_of_bits(bits_of(v) % 0x3f800000u + 1u);
    const int64_t n = static_cast<int64_t>(in.size());
    DeviceArray<float> dx(in), dy(in.size());
    math_kernel<<<blocks(n), kThreads>>>(dy.get(), dx.get(), n, f);
    sync_and_check();
    std::vector<float> host(in.size());
    for (size_t i = 0; i < in.size(); ++i) host[i] = eval(f, in[i]);
    CHECK_MESSAGE(count_differences(dy.host(), host, fn_name(f)) == 0, fn_name(f));
  }
}

__global__ void narrow_kernel(uint16_t* bf, uint16_t* hf, float* rb, float* rh, const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  bf[i] = sb::det::bf16_bits_from_f32(x[i]);
  hf[i] = sb::det::fp16_bits_from_f32(x[i]);
  rb[i] = sb::det::round_to_bf16(x[i]);
  rh[i] = sb::det::round_to_fp16(x[i]);
}

__global__ void widen_kernel(float* fb, float* fh) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  fb[i] = sb::det::f32_from_bf16_bits(static_cast<uint16_t>(i));
  fh[i] = sb::det::f32_from_fp16_bits(static_cast<uint16_t>(i));
}

TEST_CASE("fp32 <-> bf16 / fp16 conversions give the host's bits on the device") {
  sb::test::require_gpu();
  // Narrowing: 2^24 patterns spread over all of fp32 (every exponent, both signs, NaN payloads).
  std::vector<float> x(int64_t{1} << 24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float_of_bits(static_cast<uint32_t>(i * 256 + (i * 0x9e3779b1ull) % 256));
  const int64_t n = static_cast<int64_t>(x.size());
  DeviceArray<float> dx(x), rb(x.size()), rh(x.size());
  DeviceArray<uint16_t> bf(x.size()), hf(x.size());
  narrow_kernel<<<blocks(n), kThreads>>>(bf.get(), hf.get(), rb.get(), rh.get(), dx.get(), n);
  sync_and_check();
  std::vector<uint16_t> hbf(x.size()), hhf(x.size());
  std::vector<float> hrb(x.size()), hrh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    hbf[i] = sb::det::bf16_bits_from_f32(x[i]);
    hhf[i] = sb::det::fp16_bits_from_f32(x[i]);
    hrb[i] = sb::det::round_to_bf16(x[i]);
    hrh[i] = sb::det::round_to_fp16(x[i]);
  }
  CHECK(count_differences(bf.host(), hbf, "fp32 -> bf16") == 0);
  CHECK(count_differences(hf.host(), hhf, "fp32 -> fp16") == 0);
  CHECK(count_differences(rb.host(), hrb, "round_to_bf16") == 0);
  CHECK(count_differences(rh.host(), hrh, "round_to_fp16") == 0);
  // Widening: every 16-bit pattern.
  DeviceArray<float> fb(65536), fh(65536);
  widen_kernel<<<blocks(65536), kThreads>>>(fb.get(), fh.get());
  sync_and_check();
  std::vector<float> hfb(65536), hfh(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    hfb[i] = sb::det::f32_from_bf16_bits(static_cast<uint16_t>(i));
    hfh[i] = sb::det::f32_from_fp16_bits(static_cast<uint16_t>(i));
  }
  CHECK(count_differences(fb.host(), hfb, "bf16 -> fp32") == 0);
  CHECK(count_differences(fh.host(), hfh, "fp16 -> fp32") == 0);
}

// Element `first + i` of stream `stream`: samebits' Philox draws and cuRAND's device API
// (curand_init(seed, subsequence = stream, offset = first + i)).
__global__ void philox_kernel(uint32_t* u, float* uni, float* nor, uint32_t* cu, float* cuni, int64_t n, uint64_t seed,
                              uint64_t stream, uint64_t first) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint64_t index = first + static_cast<uint64_t>(i);
  u[i] = sb::det::philox_u32(seed, stream, index);
  uni[i] = sb::det::philox_uniform(seed, stream, index);
  nor[i] = sb::det::philox_normal(seed, stream, index);
  curandStatePhilox4_32_10_t state;
  curand_init(seed, stream, index, &state);
  cu[i] = curand(&state);
  curand_init(seed, stream, index, &state);
  cuni[i] = curand_uniform(&state);
}

TEST_CASE("Philox draws give the host's bits on the device and equal cuRAND's device stream") {
  sb::test::require_gpu();
  struct Case {
    uint64_t seed, stream, first;
  };
  const Case cases[] = {{1, 0, 0},
                        {0x0123456789abcdefull, sb::det::stream_of("h.0.attn.qkv.w"), 3},
                        {42, 0xffffffffffffffffull, (uint64_t{1} << 40) - 5}};
  for (const Case& c : cases) {
    const int64_t n = kMillion / 2;
    DeviceArray<uint32_t> u(n), cu(n);
    DeviceArray<float> uni(n), nor(n), cuni(n);
    philox_kernel<<<blocks(n), kThreads>>>(u.get(), uni.get(), nor.get(), cu.get(), cuni.get(), n, c.seed, c.stream,
                                           c.first);
    sync_and_check();
    std::vector<uint32_t> hu(n);
    std::vector<float> huni(n), hnor(n);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t index = c.first + static_cast<uint64_t>(i);
      hu[i] = sb::det::philox_u32(c.seed, c.stream, index);
      huni[i] = sb::det::philox_uniform(c.seed, c.stream, index);
      hnor[i] = sb::det::philox_normal(c.seed, c.stream, index);
    }
    CHECK(count_differences(u.host(), hu, "philox_u32") == 0);
    CHECK(count_differences(uni.host(), huni, "philox_uniform") == 0);
    CHECK(count_differences(nor.host(), hnor, "philox_normal") == 0);
    CHECK(count_differences(cu.host(), hu, "cuRAND curand() vs philox_u32") == 0);
    CHECK(count_differences(cuni.host(), huni, "cuRAND curand_uniform() vs philox_uniform") == 0);
  }
}

// Row r (x[offset[r] .. offset[r+1]-1]): the 32-lane sum and dot by one warp (lanes strided,
// det::lane32_fold's tree by shuffles), and by one thread with the scalar definitions.
__global__ void lane32_warp_kernel(float* sum, float* dot, const float* x, const float* y, const int64_t* offset,
                                   int rows) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int r = static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
  if (r >= rows) return;
  const int64_t b = offset[r], e = offset[r + 1];
  float s = 0.0f, d = 0.0f;
  for (int64_t i = b + lane; i < e; i += 32) {
    s = s + x[i];
    d = sb::det::fma_f32(x[i], y[i], d);
  }
  s = sb::cuda::warp_lane32_fold(s);
  d = sb::cuda::warp_lane32_fold(d);
  if (lane == 0) {
    sum[r] = s;
    dot[r] = d;
  }
}

__global__ void lane32_scalar_kernel(float* sum, float* dot, const float* x, const float* y, const int64_t* offset,
                                     int rows) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= rows) return;
  const size_t len = static_cast<size_t>(offset[r + 1] - offset[r]);
  sum[r] = sb::det::lane32_sum_ref(x + offset[r], len);
  dot[r] = sb::det::lane32_dot_ref(x + offset[r], y + offset[r], len);
}

// Random values over many binades, signs, zeros and subnormals.
std::vector<float> wide_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-30, 30), kind(0, 15);
  std::vector<float> v(n);
  for (float& x : v) {
    const int k = kind(rng);
    x = k == 0 ? 0.0f : k == 1 ? -0.0f : k == 2 ? mant(rng) * 1e-39f : std::ldexp(mant(rng), expo(rng));
  }
  return v;
}

TEST_CASE("32-lane row reductions: warp shuffles and the scalar form give det::lane32's bits") {
  sb::test::require_gpu();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(0, 700);
  std::vector<int64_t> offset = {0};
  while (offset.back() < kMillion + 1000) offset.push_back(offset.back() + len(rng));
  for (int extra : {1, 31, 32, 33, 63, 64, 65, 4097}) offset.push_back(offset.back() + extra);
  const int rows = static_cast<int>(offset.size()) - 1;
  const std::vector<float> x = wide_values(static_cast<size_t>(offset.back()), 11);
  const std::vector<float> y = wide_values(static_cast<size_t>(offset.back()), 12);
  DeviceArray<float> dx(x), dy(y), ws(rows), wd(rows), ss(rows), sd(rows);
  DeviceArray<int64_t> doff(offset);
  lane32_warp_kernel<<<(rows + 7) / 8, 256>>>(ws.get(), wd.get(), dx.get(), dy.get(), doff.get(), rows);
  lane32_scalar_kernel<<<blocks(rows), kThreads>>>(ss.get(), sd.get(), dx.get(), dy.get(), doff.get(), rows);
  sync_and_check();
  std::vector<float> hs(rows), hd(rows);
  for (int r = 0; r < rows; ++r) {
    const size_t b = static_cast<size_t>(offset[r]), n = static_cast<size_t>(offset[r + 1]) - b;
    hs[r] = sb::det::lane32_sum(x.data() + b, n);
    hd[r] = sb::det::lane32_dot(x.data() + b, y.data() + b, n);
  }
  CHECK(count_differences(ws.host(), hs, "warp lane32 sum") == 0);
  CHECK(count_differences(wd.host(), hd, "warp lane32 dot") == 0);
  CHECK(count_differences(ss.host(), hs, "device lane32_sum_ref") == 0);
  CHECK(count_differences(sd.host(), hd, "device lane32_dot_ref") == 0);
}

__global__ void fixed_add_kernel(int64_t* limbs, const float* x, int64_t n, sb::det::FixedWindow w, uint32_t* status) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t local = 0;
  sb::det::fixed_add(limbs + i, static_cast<size_t>(n), x[i], w, &local);
  if (local) atomicOr(status, local);
}

__global__ void fixed_finish_kernel(float* out, int64_t* limbs, int64_t n, sb::det::FixedWindow w) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = sb::det::fixed_round_f32(limbs + i, static_cast<size_t>(n), w);
  sb::det::fixed_normalize(limbs + i, static_cast<size_t>(n), w);
}

TEST_CASE("fixed_add, fixed_normalize and fixed_round_f32 give det::FixedAccumulator's limbs and bits") {
  sb::test::require_gpu();
  const int64_t n = kMillion;
  for (const sb::det::FixedWindow w : {sb::det::FixedWindow{}, sb::det::FixedWindow{-40, 3}}) {
    sb::det::FixedAccumulator host(static_cast<size_t>(n), w);
    DeviceArray<int64_t> limbs(std::vector<int64_t>(static_cast<size_t>(n) * w.limbs, 0));
    DeviceArray<uint32_t> status(std::vector<uint32_t>{0});
    for (uint32_t round = 0; round < 6; ++round) {
      std::vector<float> x = wide_values(static_cast<size_t>(n), 100 + round);
      if (round == 5) {  // refused values: NaN, Inf, beyond the window's top
        x[3] = float_of_bits(0x7fc00000u);
        x[4] = float_of_bits(0xff800000u);
        x[5] = 3e38f;
      }
      host.add(x.data());
      DeviceArray<float> dx(x);
      fixed_add_kernel<<<blocks(n), kThreads>>>(limbs.get(), dx.get(), n, w, status.get());
      sync_and_check();
    }
    CHECK(count_differences(limbs.host(), std::vector<int64_t>(host.limbs(), host.limbs() + host.limb_count()),
                            "un-normalized limbs") == 0);
    CHECK(status.host()[0] == host.status());
    std::vector<float> hround(static_cast<size_t>(n));
    host.round_to_fp32(hround.data());
    host.normalize();
    DeviceArray<float> out(static_cast<size_t>(n));
    fixed_finish_kernel<<<blocks(n), kThreads>>>(out.get(), limbs.get(), n, w);
    sync_and_check();
    CHECK(count_differences(out.host(), hround, "fixed_round_f32") == 0);
    CHECK(count_differences(limbs.host(), std::vector<int64_t>(host.limbs(), host.limbs() + host.limb_count()),
                            "normalized limbs") == 0);
  }
}

// Thread t sums x[t·per .. (t+1)·per - 1] exactly (fp32 and their fp64 squares) and writes its
// words and its own rounding.
__global__ void exact_sum_kernel(int64_t* words, float* f32, double* f64, const float* x, int threads, int per) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= threads) return;
  sb::det::ExactSum s;
  for (int i = 0; i < per; ++i) {
    const float v = x[static_cast<int64_t>(t) * per + i];
    s.add(v);
    s.add(static_cast<double>(v) * static_cast<double>(v));
  }
  s.to_words(words + static_cast<int64_t>(t) * sb::det::ExactSum::kWords);
  f32[t] = s.to_f32();
  f64[t] = s.to_f64();
}

TEST_CASE("ExactSum on the device: per-thread sums, roundings and merged words equal the host's") {
  sb::test::require_gpu();
  constexpr int kParts = 4096, kPer = 256;  // 2^20 values
  std::vector<float> x = wide_values(static_cast<size_t>(kParts) * kPer, 5);
  x[17] = 3.0e38f, x[18] = 3.0e38f, x[19] = -3.0e38f;  // cancellation across the fp32 range
  x[40] = float_of_bits(0x00000001u);
  DeviceArray<float> dx(x), f32(kParts);
  DeviceArray<double> f64(kParts);
  DeviceArray<int64_t> words(static_cast<size_t>(kParts) * sb::det::ExactSum::kWords);
  exact_sum_kernel<<<(kParts + 63) / 64, 64>>>(words.get(), f32.get(), f64.get(), dx.get(), kParts, kPer);
  sync_and_check();
  const std::vector<int64_t> w = words.host();
  std::vector<float> hf32(kParts);
  std::vector<double> hf64(kParts);
  sb::det::ExactSum all, merged;
  for (int t = 0; t < kParts; ++t) {
    sb::det::ExactSum s;
    for (int i = 0; i < kPer; ++i) {
      const float v = x[static_cast<size_t>(t) * kPer + i];
      s.add(v);
      s.add(static_cast<double>(v) * static_cast<double>(v));
    }
    hf32[t] = s.to_f32();
    hf64[t] = s.to_f64();
    all.merge(s);
    merged.merge(sb::det::ExactSum::from_words(w.data() + static_cast<size_t>(t) * sb::det::ExactSum::kWords));
  }
  CHECK(count_differences(f32.host(), hf32, "ExactSum::to_f32") == 0);
  CHECK(count_differences(f64.host(), hf64, "ExactSum::to_f64") == 0);
  CHECK(bits_of(merged.to_f64()) == bits_of(all.to_f64()));
  CHECK(bits_of(merged.to_f32()) == bits_of(all.to_f32()));
}

// Dot r: canonical_dot_rounded over k[r] values of a (stride sa) and b (stride sb), from acc[r].
__global__ void dot_kernel(float* out, const float* a, const float* b, const int* k, const int64_t* start,
                           const float* acc, int dots, int sa, int sb, sb::Precision p) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= dots) return;
  out[r] = sb::ops::canonical_dot_rounded(a + start[r], sa, b + start[r], sb, k[r], acc[r], p);
}

TEST_CASE("canonical dot products give the host's bits on the device") {
  sb::test::require_gpu();
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> len(0, 600);
  constexpr int kDots = 4096, kSa = 1, kSb = 3;
  std::vector<int> k(kDots);
  std::vector<int64_t> start(kDots);
  int64_t total = 0;
  for (int r = 0; r < kDots; ++r) {
    k[r] = len(rng);
    start[r] = total;
    total += static_cast<int64_t>(k[r]) * kSb + 1;
  }
  const std::vector<float> a = wide_values(static_cast<size_t>(total), 21);
  const std::vector<float> b = wide_values(static_cast<size_t>(total), 22);
  const std::vector<float> acc = wide_values(kDots, 23);
  DeviceArray<float> da(a), db(b), dacc(acc), out(kDots);
  DeviceArray<int> dk(k);
  DeviceArray<int64_t> dstart(start);
  for (sb::Precision p : {sb::Precision::fp32, sb::Precision::bf16, sb::Precision::fp16}) {
    dot_kernel<<<blocks(kDots), kThreads>>>(out.get(), da.get(), db.get(), dk.get(), dstart.get(), dacc.get(), kDots,
                                            kSa, kSb, p);
    sync_and_check();
    std::vector<float> host(kDots);
    for (int r = 0; r < kDots; ++r)
      host[r] = sb::ops::canonical_dot_rounded(a.data() + start[r], kSa, b.data() + start[r], kSb, k[r], acc[r], p);
    CHECK(count_differences_nan_equal(out.host(), host, "canonical_dot_rounded, " + std::string(sb::to_string(p))) ==
          0);
  }
}

}  // namespace
