// The leaves' pass on the CPU backend (GradAccumulator::add_leaves, core/cpu/cpu_backend.cpp): two
// leaves added in one visit of the accumulator's words, their per-tensor Σg² taken in the same
// pass, give bit for bit what add(a), add(b) and TensorSums::add(a), add(b) give one after the
// other (the backend-independent default) — the rounded sums, add count, status and the squares'
// words — over spans with gaps between them (values in the gaps are added too, as a flat gradient's
// padding is), odd leaf counts, special values, 1 and 3 threads; and inside a model's step.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/det/philox.hpp"

using namespace sb;

namespace {

// Spans of tensors at 16-aligned offsets with gaps of 0-15 elements (accumulator blocks straddle
// them), sizes from 1 to past a 2^16-element statistics block.
std::vector<TensorSpan> spans_with_gaps(size_t* n) {
  std::vector<TensorSpan> spans;
  size_t at = 0;
  for (size_t numel : {size_t(7), size_t(100), size_t(65536 + 33), size_t(1), size_t(4096), size_t(300)}) {
    spans.push_back({at, numel});
    at = (at + numel + 15) / 16 * 16;
  }
  *n = at + 40;  // a tail beyond the last tensor
  return spans;
}

std::vector<float> leaf(size_t n, uint32_t stream, bool specials) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const float scale = std::ldexp(1.0f, -static_cast<int>(det::philox_u32(3, stream, i) % 40));
    g[i] = det::philox_normal(3, stream + 100, i) * scale;
  }
  if (specials) g[n / 2] = INFINITY;
  return g;
}

struct Outcome {
  std::vector<float> rounded;
  uint64_t adds;
  uint32_t status;
  std::vector<int64_t> square_words;
};

Outcome run(bool fused, const std::vector<std::vector<float>>& leaves, const std::vector<TensorSpan>& spans, size_t n,
            int threads) {
  auto be = make_cpu_backend();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto acc = be->make_accumulator(n);
  auto squares = be->make_tensor_sums(spans);
  squares->clear();
  size_t l = 0;
  for (; l + 1 < leaves.size(); l += 2) {
    if (fused) {
      acc->add_leaves(leaves[l].data(), leaves[l + 1].data(), squares.get());
    } else {
      acc->add(leaves[l].data()), acc->add(leaves[l + 1].data());
      squares->add(leaves[l].data(), false), squares->add(leaves[l + 1].data(), false);
    }
  }
  if (l < leaves.size()) {
    if (fused) {
      acc->add_leaves(leaves[l].data(), nullptr, squares.get());
    } else {
      acc->add(leaves[l].data());
      squares->add(leaves[l].data(), false);
    }
  }
  omp_set_num_threads(saved);
  Outcome out{std::vector<float>(n), acc->adds(), acc->status(), {}};
  if (out.status == 0) acc->round(out.rounded.data(), 1.0f);
  std::vector<det::ExactSum> sq(spans.size());
  squares->read(sq.data(), nullptr, nullptr);
  for (const det::ExactSum& s : sq) {
    int64_t w[det::ExactSum::kWords];
    s.to_words(w);
    out.square_words.insert(out.square_words.end(), w, w + det::ExactSum::kWords);
  }
  return out;
}

}  // namespace

TEST_CASE("add_leaves: the pass over two leaves and their squares is add, add and the squares, bitwise") {
  size_t n = 0;
  const std::vector<TensorSpan> spans = spans_with_gaps(&n);
  for (const size_t count : {size_t(1), size_t(2), size_t(5)}) {
    for (const bool specials : {false, true}) {
      std::vector<std::vector<float>> leaves;
      for (size_t l = 0; l < count; ++l)
        leaves.push_back(leaf(n, static_cast<uint32_t>(l), specials && l == count - 1));
      const Outcome ref = run(false, leaves, spans, n, 1);
      for (const int threads : {1, 3}) {
        CAPTURE(count);
        CAPTURE(specials);
        CAPTURE(threads);
        const Outcome got = run(true, leaves, spans, n, threads);
        CHECK(got.adds == ref.adds);
        CHECK(got.status == ref.status);
        CHECK(std::memcmp(got.rounded.data(), ref.rounded.data(), n * sizeof(float)) == 0);
        CHECK(got.square_words == ref.square_words);
      }
    }
  }
}
