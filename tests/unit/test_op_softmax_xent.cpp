// Fused softmax + cross-entropy (core/cpu/softmax_xent.cpp): bitwise equal to the shared row
// formulas (ops/softmax_xent.hpp), the exact max's ±0/NaN rule, loss scaling exact for powers of
// two, and the gradient against fp64 finite differences of the fp64 mean loss. Its
// vocabulary-parallel pieces over any column split, in row chunks, on 1–4 threads: the unsplit
// op's losses and stats, bit for bit; the backward over a rank's columns its columns' dlogits.
#include <doctest/doctest.h>

#include <omp.h>
#include <cmath>
#include <cstring>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/bits.hpp"
#include "test_op_support.hpp"

using namespace sb;

TEST_CASE("exact_max: order-free, +0 over -0, canonical NaN") {
  const float nan1 = det::float_of_bits(0x7fc00001u), nan2 = det::float_of_bits(0xffc00002u);
  CHECK(det::bits_of(ops::exact_max(0.0f, -0.0f)) == 0u);
  CHECK(det::bits_of(ops::exact_max(-0.0f, 0.0f)) == 0u);
  CHECK(det::bits_of(ops::exact_max(-0.0f, -0.0f)) == 0x80000000u);
  CHECK(det::bits_of(ops::exact_max(nan1, 1.0f)) == 0x7fc00000u);
  CHECK(det::bits_of(ops::exact_max(1.0f, nan2)) == 0x7fc00000u);
  CHECK(det::bits_of(ops::exact_max(nan2, nan1)) == 0x7fc00000u);
  CHECK(ops::exact_max(-INFINITY, -3.0f) == -3.0f);
  CHECK(ops::exact_max(2.0f, 1.0f) == 2.0f);
}

TEST_CASE("softmax_xent: CPU equals the row formulas, bitwise; loss scale exact") {
  auto be = make_cpu_backend();
  for (int V : {2, 31, 256, 1000}) {
    const int N = 11;
    const auto logits = test::uniform(static_cast<size_t>(N) * V, 1, -8, 8);
    std::vector<int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = (n * 37) % V;
    std::vector<float> losses(N), stats(2 * N), dl(logits.size()), dl_scaled(logits.size());
    be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
    be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
    be->softmax_xent_backward(dl_scaled.data(), logits.data(), stats.data(), targets.data(), N, V, 1024.0f);
    std::vector<float> losses_ref(N), stats_ref(2 * N), dl_ref(logits.size()), dl_unscaled(logits.size());
    for (int n = 0; n < N; ++n) {
      losses_ref[n] = ops::xent_row_forward(&stats_ref[2 * n], &logits[n * V], targets[n], V);
      for (int v = 0; v < V; ++v)
        dl_ref[n * V + v] = ops::xent_dlogit(logits[n * V + v], stats_ref[2 * n], stats_ref[2 * n + 1], v == targets[n],
                                             static_cast<float>(N), 1.0f);
    }
    for (size_t i = 0; i < dl.size(); ++i) dl_unscaled[i] = dl_scaled[i] / 1024.0f;
    CAPTURE(V);
    CHECK(test::same_bits(losses, losses_ref, "xent losses"));
    CHECK(test::same_bits(stats, stats_ref, "xent stats"));
    CHECK(test::same_bits(dl, dl_ref, "xent dlogits"));
    CHECK(test::same_bits(dl, dl_unscaled, "xent loss scale 1024"));
  }
}

TEST_CASE("softmax_xent gradient matches fp64 finite differences of the mean loss") {
  auto be = make_cpu_backend();
  const int N = 6, V = 17;
  const auto logits = test::uniform(static_cast<size_t>(N) * V, 11, -4, 4);
  std::vector<int32_t> targets = {0, 16, 3, 3, 9, 12};
  std::vector<float> losses(N), stats(2 * N), dl(logits.size());
  be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
  be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
  auto ld = test::to_double(logits);
  auto row_loss = [&](int n) {
    double m = -INFINITY, s = 0;
    for (int v = 0; v < V; ++v) m = std::fmax(m, ld[n * V + v]);
    for (int v = 0; v < V; ++v) s += std::exp(ld[n * V + v] - m);
    return m + std::log(s) - ld[n * V + targets[n]];
  };
  double worst = 0;
  for (int n = 0; n < N; ++n) worst = std::fmax(worst, std::fabs(losses[n] - row_loss(n)) / row_loss(n));
  MESSAGE("xent loss max relative error vs fp64: ", worst);
  CHECK(worst < 1e-6);
  auto loss = [&] {
    double s = 0;
    for (int n = 0; n < N; ++n) s += row_loss(n);
    return s / N;
  };
  test::check_gradient(dl, test::fd_gradient(ld, loss), 1e-5, "xent dlogits");
}

namespace {

// The vocabulary-parallel cross-entropy as GPT::loss_forward runs it: the ranks' columns [cut[r],
// cut[r+1]) in order, each continuing the max, then the parts, in `chunks` row blocks; the last
// rank's loss.
void shard_forward(Backend& be, std::vector<float>& losses, std::vector<float>& stats, const std::vector<float>& logits,
                   const std::vector<int32_t>& targets, int N, int V, const std::vector<int>& cut, int chunks) {
  const int ranks = int(cut.size()) - 1;
  std::vector<std::vector<float>> cols(static_cast<size_t>(ranks));  // each rank's (N, cols) logits
  std::vector<std::vector<int32_t>> local(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const int w = cut[r + 1] - cut[r];
    for (int n = 0; n < N; ++n) {
      cols[r].insert(cols[r].end(), logits.begin() + n * V + cut[r], logits.begin() + n * V + cut[r + 1]);
      local[r].push_back(targets[n] - cut[r]);
    }
    CHECK(cols[r].size() == size_t(N) * w);
  }
  std::vector<float> max(N), part(size_t(N) * ops::kXentPart);
  auto rows = [&](int c) { return N * c / chunks; };
  for (int r = 0; r < ranks; ++r) {
    const int w = cut[r + 1] - cut[r];
    for (int c = 0; c < chunks; ++c)
      be.xent_shard_max(max.data() + rows(c), cols[r].data() + size_t(rows(c)) * w, rows(c + 1) - rows(c), w, r > 0);
  }
  for (int r = 0; r < ranks; ++r) {
    const int w = cut[r + 1] - cut[r];
    for (int c = 0; c < chunks; ++c)
      be.xent_shard_sum(part.data() + size_t(rows(c)) * ops::kXentPart, cols[r].data() + size_t(rows(c)) * w,
                        max.data() + rows(c), local[r].data() + rows(c), rows(c + 1) - rows(c), w, cut[r], r > 0);
  }
  be.xent_shard_loss(losses.data(), stats.data(), part.data(), max.data(), N);
}

}  // namespace

TEST_CASE("xent_shard: any vocabulary split, any row chunks, any threads give softmax_xent_forward's bits") {
  auto be = make_cpu_backend();
  const int saved = omp_get_max_threads();
  for (int V : {61, 1000, 50257}) {
    const int N = V > 1000 ? 5 : 13;
    auto logits = test::uniform(static_cast<size_t>(N) * V, 21, -12, 12);
    logits[3] = -0.0f;  // a signed zero among the maxima's candidates
    std::vector<int32_t> targets(N);
    for (int n = 0; n < N; ++n) targets[n] = (n * 7919 + 5) % V;
    targets[0] = V - 1;
    std::vector<float> losses(N), stats(2 * N);
    be->softmax_xent_forward(losses.data(), stats.data(), logits.data(), targets.data(), N, V);
    // ⌈V/T⌉ rows a rank as tp_layout cuts them (T = 2, 3, 4), 32-aligned and ragged cuts, one column.
    std::vector<std::vector<int>> cuts = {{0, V}, {0, (V + 1) / 2, V}, {0, 32, V}, {0, 1, 2, V - 1, V}};
    for (int T : {3, 4}) {
      std::vector<int> c;
      for (int r = 0; r < T; ++r) c.push_back(r * ((V + T - 1) / T));
      c.push_back(V);
      cuts.push_back(c);
    }
    for (const std::vector<int>& cut : cuts) {
      for (int threads : {1, 3}) {
        omp_set_num_threads(threads);
        for (int chunks : {1, 2, 5}) {
          std::vector<float> l(N), st(2 * N);
          shard_forward(*be, l, st, logits, targets, N, V, cut, std::min(chunks, N));
          CAPTURE(V);
          CAPTURE(cut.size());
          CAPTURE(threads);
          CAPTURE(chunks);
          CHECK(test::same_bits(l, losses, "sharded xent losses"));
          CHECK(test::same_bits(st, stats, "sharded xent stats"));
        }
      }
    }
    // The backward over one rank's columns, targets relative to its first column (one of them on
    // this rank): those columns of the unsplit dlogits.
    const int first = V / 3, w = V / 2 - V / 3;
    targets[1] = first;
    std::vector<float> dl(logits.size()), dmine(size_t(N) * w), mine, want;
    be->softmax_xent_backward(dl.data(), logits.data(), stats.data(), targets.data(), N, V, 1.0f);
    std::vector<int32_t> local;
    for (int n = 0; n < N; ++n) {
      mine.insert(mine.end(), logits.begin() + n * V + first, logits.begin() + n * V + first + w);
      want.insert(want.end(), dl.begin() + n * V + first, dl.begin() + n * V + first + w);
      local.push_back(targets[n] - first);
    }
    be->softmax_xent_backward(dmine.data(), mine.data(), stats.data(), local.data(), N, w, 1.0f);
    CHECK(test::same_bits(dmine, want, "a rank's columns of dlogits"));
  }
  omp_set_num_threads(saved);
}
