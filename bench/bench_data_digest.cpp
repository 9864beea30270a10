// The cost of data provenance at the start of a run (docs/FORMAT.md "Data provenance"): XXH3-64 of
// a 256 MiB shard-sized file read through the page cache (bytes/s: the rate a first start over
// 10 B tokens of shards pays), and a digest answered by the cache (the cost of every later start,
// per file: a stat, the cache read, a stat), also for the 104 files of fineweb10B.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "samebits/data/file_digest.hpp"

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kFileBytes = std::size_t{256} << 20;

struct Fixture {
  fs::path dir, file;
  Fixture() {
    std::string tmpl = (fs::temp_directory_path() / "sb_bench_digest_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    dir = tmpl;
    file = dir / "shard.bin";
    std::vector<uint64_t> chunk(1 << 17);  // (1 MiB / 8,)
    uint64_t x = 1;
    std::ofstream out(file, std::ios::binary);
    for (std::size_t done = 0; done < kFileBytes; done += chunk.size() * 8) {
      for (uint64_t& v : chunk) v = (x = x * 6364136223846793005ull + 1442695040888963407ull);
      out.write(reinterpret_cast<const char*>(chunk.data()), std::streamsize(chunk.size() * 8));
    }
    out.close();
    ::setenv("SB_DIGEST_CACHE", (dir / "digests.tsv").string().c_str(), 1);
  }
  ~Fixture() { fs::remove_all(dir); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_hash_file(benchmark::State& state) {
  const std::string path = fixture().file.string();
  for (auto _ : state) benchmark::DoNotOptimize(sb::data::hash_file(path).digest);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kFileBytes));
}
BENCHMARK(BM_hash_file)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_file_digest_cached(benchmark::State& state) {
  const std::string path = fixture().file.string();
  sb::data::file_digest(path);  // fills the cache
  for (auto _ : state) {
    const sb::data::FileDigest d = sb::data::file_digest(path);
    if (!d.cached) state.SkipWithError("the cache did not answer");
  }
}
BENCHMARK(BM_file_digest_cached)->Unit(benchmark::kMicrosecond);

// fineweb10B's 103 training shards and 1 validation shard (small stand-ins: only the cache is
// timed), every one answered by a cache of 105 lines.
void BM_fineweb_start_cached(benchmark::State& state) {
  std::vector<std::string> files;
  for (int i = 0; i < 104; ++i) {
    files.push_back((fixture().dir / ("fineweb_train_" + std::to_string(i) + ".bin")).string());
    std::ofstream(files.back()) << i;
    sb::data::file_digest(files.back());
  }
  for (auto _ : state) {
    for (const std::string& f : files) {
      if (!sb::data::file_digest(f).cached) state.SkipWithError("the cache did not answer");
    }
  }
}
BENCHMARK(BM_fineweb_start_cached)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
