// Per-tensor exact sums and fingerprints on the device (backend.hpp TensorSums,
// Backend::fingerprints): the statistics' and fingerprints' inputs computed where the tensors
// live, O(tensors) words to the host. Sums: exact_reduce.cuh per tensor, accumulated in device
// words across add() calls; max |x|: integer atomicMax of abs_bits (exact_norm.hpp). Fingerprints:
// XXH3-64 by det/xxh3_blocks.hpp — every full 1024-byte block's lane sums in parallel, then one
// thread per lane applies the blocks in order, then the tail and the merge; inputs of at most
// 240 bytes are copied to the host and hashed there. All integer arithmetic: the values are the
// host's (det::fingerprint, core/cpu/tensor_sums.cpp) bit for bit, for any launch configuration.
#include <algorithm>
#include <utility>
#include <vector>

#include "cuda_backend_class.hpp"
#include "exact_reduce.cuh"
#include "samebits/det/fingerprint.hpp"
#include "samebits/det/xxh3_blocks.hpp"

namespace sb::cuda {
namespace {

// Σ x² and Σ x.
struct SumsAndSquares {
  const float* x;  // (n)
  __device__ void operator()(int64_t i, det::ExactSum* s) const {
    s[0].add(exact_square(x[i]));
    s[1].add(static_cast<double>(x[i]));
  }
};

// *out = max(*out, max over i < n of abs_bits(x[i])).
__global__ void max_abs_bits_kernel(const float* x, int64_t n, unsigned* out) {
  unsigned best = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    best = max(best, abs_bits(x[i]));
  for (int d = 16; d > 0; d /= 2) best = max(best, __shfl_down_sync(0xffffffffu, best, d));
  if ((threadIdx.x & 31) == 0 && best != 0) atomicMax(out, best);
}

class CudaTensorSums final : public TensorSums {
 public:
  CudaTensorSums(CudaBackend& be, std::vector<TensorSpan> spans)
      : be_(be),
        spans_(std::move(spans)),
        words_(be.alloc(DType::i64, {static_cast<int64_t>(spans_.size() * 2 * kExactWords)})),
        max_bits_(be.alloc(DType::i32, {static_cast<int64_t>(spans_.size())})) {}

  void clear() override {
    be_.zero(words_.data(), words_.bytes());
    be_.zero(max_bits_.data(), max_bits_.bytes());
  }

  void add(const float* flat, bool moments) override {
    be_.activate();
    unsigned long long* words = static_cast<unsigned long long*>(words_.data());
    for (size_t t = 0; t < spans_.size(); ++t) {
      const float* x = flat + spans_[t].offset;
      const auto n = static_cast<int64_t>(spans_[t].numel);
      unsigned long long* w = words + t * 2 * kExactWords;  // squares, then sums
      if (!moments) {
        exact_reduce<1>(be_, n, SumSquares{x}, w);
        continue;
      }
      exact_reduce<2>(be_, n, SumsAndSquares{x}, w);
      if (n > 0) {
        const int threads = be_.launch().block_threads;
        const unsigned blocks = std::min<unsigned>(grid_for(n, threads), 2u * static_cast<unsigned>(be_.sm_count()));
        max_abs_bits_kernel<<<blocks, threads, 0, be_.stream()>>>(x, n, static_cast<unsigned*>(max_bits_.data()) + t);
        SB_CUDA_CHECK_LAUNCH();
      }
    }
  }

  void read(det::ExactSum* squares, det::ExactSum* sums, float* max_abs) override {
    be_.activate();
    std::vector<unsigned long long> words(spans_.size() * 2 * kExactWords);
    std::vector<unsigned> bits(spans_.size());
    be_.download(words.data(), words_.data(), words.size() * sizeof(unsigned long long));
    if (max_abs != nullptr) be_.download(bits.data(), max_bits_.data(), bits.size() * sizeof(unsigned));
    for (size_t t = 0; t < spans_.size(); ++t) {
      squares[t] = exact_from_words(words.data() + t * 2 * kExactWords);
      if (sums != nullptr) sums[t] = exact_from_words(words.data() + (t * 2 + 1) * kExactWords);
      if (max_abs != nullptr) max_abs[t] = max_abs_of_bits(bits[t]);
    }
  }

 private:
  CudaBackend& be_;
  std::vector<TensorSpan> spans_;
  Tensor words_;     // (spans, 2, kExactWords): Σ x², Σ x as exact-sum words
  Tensor max_bits_;  // (spans) max abs_bits
};

// out[b] = the 8 lane sums of full block b of data.  out: (blocks, 8)
__global__ void xxh3_blocks_kernel(const unsigned char* data, int64_t blocks, const unsigned char* secret,
                                   unsigned long long* out) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks) return;
  uint64_t c[8];
  det::xxh3::block_contribution(c, data + b * det::kXxh3Block, det::kXxh3StripesPerBlock, secret);
  for (int i = 0; i < 8; ++i) out[b * 8 + i] = c[i];
}

// One block of 8 threads: thread i applies every block's lane-i sum in order; thread 0 then
// finishes.  *out = XXH3_64bits(data, len), len > kXxh3MidMax.
__global__ void xxh3_chain_kernel(const unsigned char* data, size_t len, const unsigned long long* contributions,
                                  const unsigned char* secret, unsigned long long* out) {
  __shared__ uint64_t lanes[8];
  const int i = static_cast<int>(threadIdx.x);
  uint64_t lane = det::xxh3::initial_lane(i);
  const uint64_t key = det::xxh3::scramble_key(secret, i);
  const size_t blocks = det::xxh3::full_blocks(len);
  for (size_t b = 0; b < blocks; ++b) lane = det::xxh3::apply_block_lane(lane, contributions[b * 8 + i], key);
  lanes[i] = lane;
  __syncthreads();
  if (i == 0) *out = det::xxh3::finish_long(lanes, data, len, secret);
}

}  // namespace

std::unique_ptr<TensorSums> CudaBackend::make_tensor_sums(std::vector<TensorSpan> spans) {
  return std::make_unique<CudaTensorSums>(*this, std::move(spans));
}

void CudaBackend::fingerprints(const float* flat, const std::vector<TensorSpan>& spans, uint64_t* out) {
  activate();
  if (!xxh3_secret_.defined()) {
    xxh3_secret_ = alloc(DType::i64, {static_cast<int64_t>(det::kXxh3SecretSize / 8)});
    upload(xxh3_secret_.data(), det::xxh3_default_secret(), det::kXxh3SecretSize);
  }
  const auto* secret = static_cast<const unsigned char*>(xxh3_secret_.data());
  size_t most_blocks = 0;
  for (const TensorSpan& s : spans) most_blocks = std::max(most_blocks, s.numel * sizeof(float) / det::kXxh3Block);
  auto* contributions = static_cast<unsigned long long*>(
      scratch(Scratch::fingerprint, std::max<size_t>(1, most_blocks) * 8 * sizeof(uint64_t)));
  if (!fingerprint_out_.defined() || fingerprint_out_.numel() < static_cast<int64_t>(spans.size()))
    fingerprint_out_ = alloc(DType::i64, {static_cast<int64_t>(spans.size())});
  auto* device_out = static_cast<unsigned long long*>(fingerprint_out_.data());
  std::vector<unsigned char> short_input(det::kXxh3MidMax);
  std::vector<size_t> long_spans;
  for (size_t t = 0; t < spans.size(); ++t) {
    const auto* data = reinterpret_cast<const unsigned char*>(flat + spans[t].offset);
    const size_t len = spans[t].numel * sizeof(float);
    if (len <= det::kXxh3MidMax) {  // XXH3's short paths: on the host, O(60) words
      download(short_input.data(), data, len);
      out[t] = det::fingerprint(short_input.data(), len);
      continue;
    }
    const auto blocks = static_cast<int64_t>(det::xxh3::full_blocks(len));
    if (blocks > 0) {
      const int threads = launch().block_threads;
      xxh3_blocks_kernel<<<grid_for(blocks, threads), threads, 0, stream()>>>(data, blocks, secret, contributions);
      SB_CUDA_CHECK_LAUNCH();
    }
    xxh3_chain_kernel<<<1, 8, 0, stream()>>>(data, len, contributions, secret, device_out + t);
    SB_CUDA_CHECK_LAUNCH();
    long_spans.push_back(t);
  }
  if (long_spans.empty()) return;
  std::vector<uint64_t> host(spans.size());
  download(host.data(), device_out, spans.size() * sizeof(uint64_t));
  for (size_t t : long_spans) out[t] = host[t];
}

}  // namespace sb::cuda
