// The cost of reading run files in a reader process (isolated_read.hpp, docs/FORMAT.md "Reading
// untrusted files"): on the run file named by SB_BENCH_RUN_FILE (e.g. the 20-step default run, about
// 7 MB), what `samebits inspect` reads — RunReader::open and the final state, two reader processes —
// against the same datasets read in this process with the h5 layer, alternating, medians of wall
// and CPU times (this process and its reader processes: robust to other work on the machine); the
// structure walk (h5_structure.hpp) of both files alone, which the readers do before HDF5 opens
// them; and a reader process asked for a kind it does not know, which answers at once with an error
// (the spawn, exec, limits, pipes and wait alone).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/h5_structure.hpp"
#include "samebits/core/io/isolated_read.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/error.hpp"

namespace {

using namespace sb;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds of this process and of its waited-for children (the reader processes): the cost
// whatever else runs on the machine.
double cpu_now() {
  double total = 0;
  for (const int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    total += double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The same datasets as RunReader::open + read_final_state (from its store file `state`, empty when
// none), read here (no reader process, no structure walk).
std::size_t read_in_process(const std::string& path, const std::string& state,
                            const std::vector<run::TensorInfo>& tensors) {
  run::check_seal(path);
  const h5::File f = h5::File::open(path);
  std::size_t bytes = f.attr_string("config").size() + f.group("tensors").attr_string("names").size();
  for (const run::SeriesColumn& c : run::series_columns()) {
    if (!f.has(c.path)) continue;  // a QK-clip column of a run without optim.qk_clip
    const h5::Dataset d = f.dataset(c.path);
    const auto read_as = [&](auto zero) { bytes += d.read<decltype(zero)>().size() * sizeof(zero); };
    h5::visit_element(c.dtype, read_as);
  }
  if (!state.empty()) {
    run::check_seal(state);
    bytes += run::read_state(h5::File::open(state), tensors).weights.size();
  }
  return bytes;
}

// The structure walks of the run file and its final state.
void walk(const std::string& path) { h5::check_structure(path, std::filesystem::file_size(path) - run::kSealBytes); }

void BM_isolated_read(benchmark::State& state) {
  const char* path_env = std::getenv("SB_BENCH_RUN_FILE");
  if (path_env == nullptr) {
    state.SkipWithError(
        "set SB_BENCH_RUN_FILE to a finished run file (e.g. 20 steps of experiments/configs/default.ini)");
    return;
  }
  const std::string path = path_env;
  const std::size_t file_bytes = std::filesystem::file_size(path);
  const run::RunReader opened = run::RunReader::open(path);
  const std::vector<run::TensorInfo> tensors = opened.tensors();
  const std::string state_file = opened.has_final_state()
                                     ? run::store_file(path, run::StoreEntry{opened.info().steps, run::kStateBit, 0, 0})
                                     : std::string();
  std::vector<double> isolated_s, local_s, empty_s, isolated_cpu, local_cpu, walk_s;
  for (auto _ : state) {
    double t = now(), c = cpu_now();
    const run::RunReader r = run::RunReader::open(path);
    if (r.has_final_state()) benchmark::DoNotOptimize(r.read_final_state().weights.data());
    isolated_s.push_back(now() - t);
    isolated_cpu.push_back(cpu_now() - c);
    t = now(), c = cpu_now();
    benchmark::DoNotOptimize(read_in_process(path, state_file, tensors));
    local_s.push_back(now() - t);
    local_cpu.push_back(cpu_now() - c);
    t = now();
    walk(path);
    if (!state_file.empty()) walk(state_file);
    walk_s.push_back(now() - t);
    t = now();
    try {
      io::read_isolated("no such kind", path);
    } catch (const Error&) {}
    empty_s.push_back(now() - t);
  }
  const double iso = median(isolated_s), local = median(local_s), empty = median(empty_s);
  const double iso_cpu = median(isolated_cpu), local_cpu_s = median(local_cpu), walked = median(walk_s);
  state.counters["structure_walk_ms"] = 1e3 * walked;
  state.counters["isolated_cpu_ms"] = 1e3 * iso_cpu;
  state.counters["in_process_cpu_ms"] = 1e3 * local_cpu_s;
  state.counters["isolated_ms"] = 1e3 * iso;
  state.counters["in_process_ms"] = 1e3 * local;
  state.counters["empty_reader_ms"] = 1e3 * empty;
  std::printf(
      "%s (%.1f MB): open + final state %.1f ms in reader processes, %.1f ms in this process "
      "(+%.1f ms, x%.2f); CPU time %.1f ms (with the readers) vs %.1f ms; one reader process answering "
      "an error at once: %.1f ms; the structure walks of both files: %.2f ms\n",
      path.c_str(), double(file_bytes) / 1e6, 1e3 * iso, 1e3 * local, 1e3 * (iso - local), iso / local, 1e3 * iso_cpu,
      1e3 * local_cpu_s, 1e3 * empty, 1e3 * walked);
}
BENCHMARK(BM_isolated_read)->Iterations(30)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
