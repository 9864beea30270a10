// The device-resident step's reductions, CPU vs CUDA bitwise (label gpu): Backend::fingerprints
// (XXH3-64 of each span by det/xxh3_blocks.hpp on the device, short spans on the host) equal
// det::fingerprint for spans of every kind of length (empty, ≤ 240 bytes, block edges, a large
// one), and TensorSums (Σ x², Σ x, max |x|, accumulated over several adds, with NaN and Inf)
// equal the host's, under every parity launch configuration; the host traffic of a fingerprint
// call is O(spans) words.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/det/fingerprint.hpp"

using namespace sb;
using namespace sb::test;

namespace {

// Spans of a flat buffer of n floats: lengths 0, 1, 60 (240 bytes), 61, 256 (a full block),
// 257, 4096 + 16, and the rest.
std::vector<TensorSpan> spans_for(size_t n) {
  std::vector<TensorSpan> s;
  size_t at = 0;
  for (size_t len : {size_t{0}, size_t{1}, size_t{60}, size_t{61}, size_t{256}, size_t{257}, size_t{4112}}) {
    s.push_back({at, len});
    at += (len + 15) / 16 * 16;
  }
  s.push_back({at, n - at});
  return s;
}

}  // namespace

TEST_CASE("fingerprints and per-tensor exact sums: GPU equals CPU") {
  require_gpu();
  const size_t n = 3 * 100003;
  std::vector<float> host = parity_values(n, 21, 1e30f);
  const std::vector<TensorSpan> spans = spans_for(n);
  std::vector<uint64_t> want(spans.size());
  for (size_t t = 0; t < spans.size(); ++t) want[t] = det::fingerprint(host.data() + spans[t].offset, spans[t].numel);
  const auto cpu = make_cpu_backend();
  for (const CudaLaunchConfig& launch : parity_launches()) {
    const auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    const std::string at = "launch " + launch.describe() + ": ";
    Guarded dev(*gpu, n, host);
    const HostTraffic before = gpu->host_traffic();
    std::vector<uint64_t> got(spans.size());
    gpu->fingerprints(dev.data(), spans, got.data());
    for (size_t t = 0; t < spans.size(); ++t)
      CHECK_MESSAGE(got[t] == want[t], at, "span ", t, " of ", spans[t].numel, " floats");
    CHECK((gpu->host_traffic() - before).to_host <= 8 * spans.size() + 4 * 61);

    std::vector<float> second = parity_values(n, 22);
    second[spans[3].offset] = det::float_of_bits(0x7f800000u);          // +Inf
    second[spans.back().offset + 9] = det::float_of_bits(0xffc00001u);  // a NaN
    Guarded dev2(*gpu, n, second);
    auto g = gpu->make_tensor_sums(spans);
    auto c = cpu->make_tensor_sums(spans);
    for (auto* s : {g.get(), c.get()}) s->clear();
    g->add(dev.data(), true);
    g->add(dev2.data(), true);
    c->add(host.data(), true);
    c->add(second.data(), true);
    std::vector<det::ExactSum> gsq(spans.size()), gsm(spans.size()), csq(spans.size()), csm(spans.size());
    std::vector<float> gmx(spans.size()), cmx(spans.size());
    g->read(gsq.data(), gsm.data(), gmx.data());
    c->read(csq.data(), csm.data(), cmx.data());
    for (size_t t = 0; t < spans.size(); ++t) {
      CHECK_MESSAGE(det::bits_of(gsq[t].to_f64()) == det::bits_of(csq[t].to_f64()), at, "Σx² ", t);
      CHECK_MESSAGE(det::bits_of(gsm[t].to_f64()) == det::bits_of(csm[t].to_f64()), at, "Σx ", t);
      CHECK_MESSAGE(det::bits_of(gmx[t]) == det::bits_of(cmx[t]), at, "max ", t);
    }
    CHECK(dev.guards_intact());
  }
}
