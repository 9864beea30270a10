// The CUDA backend: device, stream, device memory (cudaMalloc, 256-byte aligned, zero-filled on
// the stream), copies, scratch buffers, the cuBLAS handle and the launch configuration. No
// arithmetic on values here; the ops live in their own files.
#include "cuda_backend_class.hpp"

#include <charconv>
#include <cstdlib>
#include <utility>

#include "samebits/det/error.hpp"

namespace sb {

namespace {

// "key=value" pairs separated by commas; fn(key, value) for each.
template <class Fn>
void for_each_pair(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    SB_CHECK(eq != std::string_view::npos, "CUDA launch configuration item '", item,
             "' is not key=value; expected e.g. \"gemm=1,rows=4,threads=256\"");
    fn(item.substr(0, eq), item.substr(eq + 1));
  }
}

int parse_int(std::string_view key, std::string_view value) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  SB_CHECK(ec == std::errc{} && end == value.data() + value.size(), "CUDA launch configuration ", key, "=", value,
           " is not an integer");
  return v;
}

}  // namespace

CudaLaunchConfig CudaLaunchConfig::parse(std::string_view text) {
  CudaLaunchConfig c;
  for_each_pair(text, [&](std::string_view key, std::string_view value) {
    if (key == "gemm") {
      c.gemm_tile = value == "auto" ? -1 : parse_int(key, value);
    } else if (key == "rows") {
      c.row_warps = parse_int(key, value);
    } else if (key == "threads") {
      c.block_threads = parse_int(key, value);
    } else {
      SB_FAIL("unknown CUDA launch configuration key '", key,
              "'; the keys are gemm (a tile index or auto), rows (warps per block of the row "
              "kernels) and threads (threads per block of the elementwise kernels)");
    }
  });
  c.validate();
  return c;
}

void CudaLaunchConfig::validate() const {
  const int tiles = static_cast<int>(cuda_gemm_tiles().size());
  SB_CHECK(gemm_tile >= -1 && gemm_tile < tiles, "CUDA launch configuration gemm=", gemm_tile,
           " is not a tile index: expected auto (-1) or 0..", tiles - 1);
  SB_CHECK(row_warps >= 1 && row_warps <= 32, "CUDA launch configuration rows=", row_warps,
           " is out of range: expected 1..32 warps per block");
  SB_CHECK(block_threads >= 32 && block_threads <= 1024 && block_threads % 32 == 0,
           "CUDA launch configuration threads=", block_threads,
           " is out of range: expected a multiple of 32 in 32..1024");
}

std::string CudaLaunchConfig::describe() const {
  return detail::concat("gemm=", gemm_tile < 0 ? std::string("auto") : std::to_string(gemm_tile), " rows=", row_warps,
                        " threads=", block_threads);
}

CudaOptions CudaOptions::from_environment() {
  CudaOptions o;
  if (const char* launch = std::getenv("SAMEBITS_CUDA_LAUNCH")) o.launch = CudaLaunchConfig::parse(launch);
  if (const char* tf32 = std::getenv("SAMEBITS_CUDA_TF32")) {
    const std::string_view v(tf32);
    SB_CHECK(v == "0" || v == "1", "SAMEBITS_CUDA_TF32=", v, " must be 0 or 1");
    o.vendor_tf32 = v == "1";
  }
  return o;
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device / no driver" error: 0 devices is the answer
    return 0;
  }
  return count;
}

namespace cuda {

CudaBackend::CudaBackend(Numerics numerics, const CudaOptions& options, int device)
    : Backend(numerics), gemm_(gemm_engine_of(numerics)), options_(options), device_(device) {
  options_.launch.validate();
  const int count = cuda_device_count();
  SB_CHECK(device >= 0 && device < count, "CUDA device ", device, " requested, but ", count,
           " device(s) are visible; choose 0..", count - 1, " or use run.backend=cpu");
  SB_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  name_ = prop.name;
  sm_count_ = prop.multiProcessorCount;
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaBackend::~CudaBackend() {
  // Destructors cannot throw: errors here (e.g. a context already torn down at exit) are dropped.
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (Buffer& b : scratch_) cudaFree(b.ptr);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaBackend::activate() const {
  int current = -1;
  SB_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) SB_CUDA_CHECK(cudaSetDevice(device_));
}

std::string CudaBackend::describe() const {
  return detail::concat("cuda:", device_, " ", name_, " (sm_", cc_major_, cc_minor_, ", ", sm_count_, " SMs; launch ",
                        options_.launch.describe(), options_.vendor_tf32 ? "; vendor TF32" : "", "; ",
                        sb::describe(numerics()), ")");
}

Tensor CudaBackend::alloc(DType dtype, Shape shape) {
  activate();
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_bytes(dtype);
  const size_t padded = std::max<size_t>(bytes, 256);  // never a null pointer for an empty tensor
  void* p = nullptr;
  SB_CUDA_CHECK(cudaMalloc(&p, padded));
  const int dev = device_;
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(p), [dev](std::byte* q) {
    // A deleter cannot throw; cudaFree waits for the work that still uses the memory.
    cudaSetDevice(dev);
    cudaFree(q);
  });
  SB_CUDA_CHECK(cudaMemsetAsync(p, 0, padded, stream_));
  return Tensor(std::move(storage), dtype, std::move(shape), Device::cuda);
}

void CudaBackend::upload(void* dst, const void* host_src, size_t bytes) {
  count_from_host(bytes);
  if (bytes == 0) return;
  SB_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyDefault, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::download(void* host_dst, const void* src, size_t bytes) {
  count_to_host(bytes);
  if (bytes == 0) return;
  SB_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDefault, stream_));
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  activate();
  upload(dst, host_src, bytes);
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  activate();
  download(host_dst, src, bytes);
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  activate();
  if (bytes) SB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::zero(void* dst, size_t bytes) {
  activate();
  if (bytes) SB_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
}

void CudaBackend::synchronize() {
  activate();
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CudaBackend::scratch(Scratch slot, size_t bytes) {
  Buffer& b = scratch_[static_cast<size_t>(slot)];
  if (b.bytes < bytes) {
    SB_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old buffer may still be in use
    SB_CUDA_CHECK(cudaFree(b.ptr));
    b = Buffer{};
    SB_CUDA_CHECK(cudaMalloc(&b.ptr, bytes));
    b.bytes = bytes;
  }
  return b.ptr;
}

OptimKernels& CudaBackend::optim_kernels() {
  if (optim_kernels_ == nullptr) optim_kernels_ = make_optim_kernels(*this);
  return *optim_kernels_;
}

cublasHandle_t CudaBackend::cublas() {
  if (cublas_ == nullptr) {
    SB_CUBLAS_CHECK(cublasCreate(&cublas_));
    SB_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    SB_CUBLAS_CHECK(
        cublasSetMathMode(cublas_, options_.vendor_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  return cublas_;
}

CudaBackend& CudaBackend::of(Backend& backend) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  SB_CHECK(cuda != nullptr, "expected a CUDA backend, got ", backend.describe());
  return *cuda;
}

}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend(Numerics numerics, int device) {
  return make_cuda_backend(numerics, CudaOptions::from_environment(), device);
}

std::unique_ptr<Backend> make_cuda_backend(Numerics numerics, const CudaOptions& options, int device) {
  return std::make_unique<cuda::CudaBackend>(numerics, options, device);
}

cudaStream_t cuda_stream(Backend& backend) { return cuda::CudaBackend::of(backend).stream(); }

int cuda_device(Backend& backend) { return cuda::CudaBackend::of(backend).device_index(); }

}  // namespace sb
