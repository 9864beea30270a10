// bench_gemm_cuda: the canonical SIMT GEMM (rule 1: one fma chain per output, no tensor cores)
// against cuBLAS SGEMM with TF32 off (CUBLAS_DEFAULT_MATH), cuBLAS TF32 and cuBLAS bf16 GemmEx
// (fp32 accumulation), at 4096³ and at the default model's shapes; every canonical tile shape at
// 4096³. Times with CUDA events on one stream, median of the repetitions; prints a table of
// milliseconds, TFLOP/s and the canonical/SGEMM throughput ratio. Exit 77 without a GPU.
//   bench_gemm_cuda [--quick]   (--quick: fewer repetitions)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "samebits/core/cuda/check.hpp"
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fp_formats.hpp"

namespace {

#define BENCH_CUBLAS(call)                                                                                   \
  do {                                                                                                       \
    const cublasStatus_t s_ = (call);                                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) SB_FAIL("cuBLAS call ", #call, " failed: ", cublasGetStatusString(s_)); \
  } while (0)

struct GemmShape {
  const char* name;
  int m, n, k;
  sb::Trans ta, tb;
};

// Median milliseconds of `reps` runs of fn on `stream` (after two warm-up runs).
double time_ms(cudaStream_t stream, int reps, const std::function<void()>& fn) {
  fn();
  fn();
  cudaEvent_t start, stop;
  SB_CUDA_CHECK(cudaEventCreate(&start));
  SB_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    SB_CUDA_CHECK(cudaEventRecord(start, stream));
    fn();
    SB_CUDA_CHECK(cudaEventRecord(stop, stream));
    SB_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  SB_CUDA_CHECK(cudaEventDestroy(start));
  SB_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Device buffer of n elements of T filled from the host.
template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  SB_CUDA_CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  SB_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

struct Row {
  std::string shape, method;
  double ms, tflops;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    if (sb::cuda_device_count() == 0) {
      std::printf("SKIPPED: no CUDA device on this machine\n");
      return 77;
    }
    const GemmShape shapes[] = {
        {"4096^3", 4096, 4096, 4096, sb::Trans::no, sb::Trans::no},
        {"qkv fwd 512x384x128", 512, 384, 128, sb::Trans::no, sb::Trans::yes},
        {"fc fwd 512x512x128", 512, 512, 128, sb::Trans::no, sb::Trans::yes},
        {"fc proj fwd 512x128x512", 512, 128, 512, sb::Trans::no, sb::Trans::yes},
        {"lm head fwd 512x256x128", 512, 256, 128, sb::Trans::no, sb::Trans::yes},
        {"fc dW 512x128x512", 512, 128, 512, sb::Trans::yes, sb::Trans::no},
    };
    std::vector<Row> rows;
    double canonical_4096 = 0, sgemm_4096 = 0;
    for (const GemmShape& s : shapes) {
      const bool big = s.m >= 4096;
      const int reps = quick ? 3 : (big ? 10 : 50);
      auto be = sb::make_cuda_backend(sb::Numerics::deterministic());
      cudaStream_t stream = sb::cuda_stream(*be);
      const size_t asz = static_cast<size_t>(s.m) * s.k, bsz = static_cast<size_t>(s.k) * s.n;
      std::vector<float> ha(asz), hb(bsz);
      for (size_t i = 0; i < asz; ++i) ha[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
      for (size_t i = 0; i < bsz; ++i) hb[i] = static_cast<float>((i * 2246822519u) % 2001) / 1000.0f - 1.0f;
      std::vector<uint16_t> ha16(asz), hb16(bsz);
      for (size_t i = 0; i < asz; ++i) ha16[i] = sb::det::bf16_bits_from_f32(ha[i]);
      for (size_t i = 0; i < bsz; ++i) hb16[i] = sb::det::bf16_bits_from_f32(hb[i]);
      float* a = device_copy(ha);
      float* b = device_copy(hb);
      uint16_t* a16 = device_copy(ha16);
      uint16_t* b16 = device_copy(hb16);
      float* c = nullptr;
      SB_CUDA_CHECK(cudaMalloc(&c, static_cast<size_t>(s.m) * s.n * sizeof(float)));
      const bool at = s.ta == sb::Trans::yes, bt = s.tb == sb::Trans::yes;
      const int lda = at ? s.m : s.k, ldb = bt ? s.k : s.n, ldc = s.n;
      const double flop = 2.0 * s.m * s.n * s.k;
      auto add = [&](const std::string& method, double ms) {
        rows.push_back({s.name, method, ms, flop / (ms * 1e-3) / 1e12});
        return ms;
      };
      const double canon =
          add("canonical (auto tile)", time_ms(stream, reps, [&] {
                be->gemm({s.ta, s.tb, s.m, s.n, s.k, a, lda, b, ldb, c, ldc, false, sb::Precision::fp32});
              }));
      if (big) {
        canonical_4096 = canon;
        for (int t = 0; t < static_cast<int>(sb::cuda_gemm_tiles().size()); ++t) {
          sb::CudaOptions o;
          o.launch.gemm_tile = t;
          auto bt_be = sb::make_cuda_backend(sb::Numerics::deterministic(), o);
          const sb::CudaGemmTile& tile = sb::cuda_gemm_tiles()[static_cast<size_t>(t)];
          const std::string name = sb::detail::concat("canonical tile ", t, " (", tile.bm, "x", tile.bn, "x", tile.bk,
                                                      ", ", tile.tm, "x", tile.tn, ")");
          add(name, time_ms(sb::cuda_stream(*bt_be), reps, [&] {
                bt_be->gemm({s.ta, s.tb, s.m, s.n, s.k, a, lda, b, ldb, c, ldc, false, sb::Precision::fp32});
              }));
        }
      }
      cublasHandle_t h;
      BENCH_CUBLAS(cublasCreate(&h));
      BENCH_CUBLAS(cublasSetStream(h, stream));
      const float one = 1.0f, zero = 0.0f;
      const cublasOperation_t oa = at ? CUBLAS_OP_T : CUBLAS_OP_N, ob = bt ? CUBLAS_OP_T : CUBLAS_OP_N;
      // Row-major C = op(A)·op(B) as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
      BENCH_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
      const double sg = add("cuBLAS SGEMM (TF32 off)", time_ms(stream, reps, [&] {
                              BENCH_CUBLAS(cublasSgemm(h, ob, oa, s.n, s.m, s.k, &one, b, ldb, a, lda, &zero, c, ldc));
                            }));
      if (big) sgemm_4096 = sg;
      BENCH_CUBLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
      add("cuBLAS SGEMM TF32", time_ms(stream, reps, [&] {
            BENCH_CUBLAS(cublasSgemm(h, ob, oa, s.n, s.m, s.k, &one, b, ldb, a, lda, &zero, c, ldc));
          }));
      BENCH_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
      add("cuBLAS bf16 GemmEx (fp32 acc.)", time_ms(stream, reps, [&] {
            BENCH_CUBLAS(cublasGemmEx(h, ob, oa, s.n, s.m, s.k, &one, b16, CUDA_R_16BF, ldb, a16, CUDA_R_16BF, lda,
                                      &zero, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
          }));
      BENCH_CUBLAS(cublasDestroy(h));
      std::printf("%-26s canonical %.3f ms, SGEMM %.3f ms: canonical/SGEMM throughput %.2f\n", s.name, canon, sg,
                  sg / canon);
      std::fflush(stdout);
      SB_CUDA_CHECK(cudaFree(a));
      SB_CUDA_CHECK(cudaFree(b));
      SB_CUDA_CHECK(cudaFree(a16));
      SB_CUDA_CHECK(cudaFree(b16));
      SB_CUDA_CHECK(cudaFree(c));
    }
    cudaDeviceProp prop{};
    SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("\nGEMM on %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    std::printf("%-26s %-40s %10s %9s\n", "shape", "method", "ms", "TFLOP/s");
    for (const Row& r : rows)
      std::printf("%-26s %-40s %10.4f %9.2f\n", r.shape.c_str(), r.method.c_str(), r.ms, r.tflops);
    std::printf("canonical / cuBLAS SGEMM (TF32 off) at 4096^3: %.2f (target >= 0.80)\n", sgemm_4096 / canonical_4096);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm_cuda: %s\n", e.what());
    return 2;
  }
}
