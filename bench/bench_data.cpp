// Data loader throughput on one core (docs/DATA.md): tokens/s for leaves read by the sampler from
// memory-mapped llm.c shards (uint16 and uint32; page cache warm) and from the synthetic generator,
// and the cost of the epoch permutation alone. Target: > 50M tokens/s from shards.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "samebits/data/permutation.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sb::data;

constexpr uint64_t kShardTokens = uint64_t{1} << 26;  // 64M tokens: 128 MiB (v1), 256 MiB (v2)

// Shards written once per process (from the synthetic language, vocab 50257), removed at exit.
struct Fixture {
  fs::path dir;
  Fixture() {
    std::string tmpl = (fs::temp_directory_path() / "sb_bench_data_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir = tmpl;
    const SyntheticLanguage lang(SyntheticConfig{}, 50257, 1, Split::train);
    std::vector<int32_t> buf(1 << 20);  // (chunk,)
    for (int version : {1, 2}) {
      ShardWriter w(path(version), version);
      for (uint64_t pos = 0; pos < kShardTokens; pos += buf.size()) {
        lang.read(pos, buf.size(), buf.data());
        w.append(buf.data(), buf.size());
      }
      w.finish();
    }
  }
  ~Fixture() { fs::remove_all(dir); }
  std::string path(int version) const { return (dir / ("tokens_v" + std::to_string(version) + ".bin")).string(); }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// Every leaf of a step, step after step; items are tokens.
void run_leaves(benchmark::State& state, const Sampler& sampler, int seq_len, int leaf_size, int leaves) {
  std::vector<int32_t> leaf(size_t(leaf_size) * (seq_len + 1));  // (leaf_size, seq_len + 1)
  uint64_t step = 0;
  for (auto _ : state) {
    for (int l = 0; l < leaves; ++l) sampler.leaf(step, l, leaf.data());
    benchmark::DoNotOptimize(leaf.data());
    ++step;
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * leaves * leaf_size * (seq_len + 1));
}

// Leaves of (leaf_size 8, seq_len 1024) from shards of one version, step after step.
void BM_ShardLeaves(benchmark::State& state) {
  const ShardFiles shards(fixture().path(int(state.range(0))), 50257);
  std::vector<int32_t> warm(shards.size());  // (tokens,) touch every page once
  shards.read(0, shards.size(), warm.data());
  const int seq_len = 1024, leaf_size = 8, leaves = 16;
  const Sampler sampler(shards, seq_len, leaf_size, leaves, 1);
  run_leaves(state, sampler, seq_len, leaf_size, leaves);
}
BENCHMARK(BM_ShardLeaves)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Leaves of whole synthetic documents (seq_len = doc_len = 256), vocab 256.
void BM_SyntheticLeaves(benchmark::State& state) {
  const SyntheticLanguage lang(SyntheticConfig{}, int(state.range(0)), 1, Split::train);
  const int seq_len = 256, leaf_size = 8, leaves = 16;
  const Sampler sampler(lang, seq_len, leaf_size, leaves, 1);
  run_leaves(state, sampler, seq_len, leaf_size, leaves);
}
BENCHMARK(BM_SyntheticLeaves)->Arg(256)->Arg(50257)->Unit(benchmark::kMillisecond);

// The epoch permutation alone: window lookups per second for an epoch of 2^26 windows.
void BM_KeyedPermutation(benchmark::State& state) {
  uint64_t k = 0, sum = 0;
  for (auto _ : state) {
    sum += keyed_permutation(k % (uint64_t{1} << 26), uint64_t{1} << 26, 1, 2);
    ++k;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_KeyedPermutation);

}  // namespace

BENCHMARK_MAIN();
