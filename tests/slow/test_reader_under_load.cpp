// The reader process (isolated_read.hpp) started 1000 times while this process is as busy as a
// training run makes it: OpenMP threads allocating and freeing in a parallel region (malloc's
// locks taken and released all the time), and a run-store writer writing a snapshot file through
// HDF5 on its background thread at every step of a training loop (whose steps are OpenMP regions
// too). A reader forked from this process could inherit one of those locks held and hang until its
// deadline; a spawned one cannot. Every read must answer the right tokens, none may take long.
// Label slow: 90-120 s in release on 2 shared cores (the spinning threads take most of them).
#include <doctest/doctest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/train/run_header.hpp"
#include "support/token_files.hpp"

namespace {

using namespace sb;

std::vector<float> weights(Trainer& trainer) {
  std::vector<float> v(trainer.model().flat_size());
  trainer.backend().copy_to_host(v.data(), trainer.model().weights().data(), v.size() * 4);
  return v;
}

}  // namespace

TEST_CASE("1000 reads in reader processes while OpenMP threads and the background store writer are busy") {
  sbt::TempDir dir;
  std::vector<int32_t> tokens(5000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919) % 256);
  const std::string file = dir / "tokens.h5";
  sbt::write_token_h5(file, "/tokens", H5T_STD_U16LE, tokens, 1024);

  std::atomic<bool> stop{false};
  std::atomic<int64_t> allocations{0}, snapshots{0};
  std::thread spinning([&] {
#pragma omp parallel num_threads(4)
    {
      int64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        std::vector<char> block(std::size_t(1024 + 97 * (n % 64)));
        block[block.size() / 2] = char(n);
        ++n;
      }
      allocations += n;
    }
  });
  std::thread writing([&] {
    Config config = cli::config_from_text(sbt::tiny_config(), {});
    config.train.steps = 1 << 20;
    Trainer trainer(config);
    run::RunWriter w = run::RunWriter::create(dir / "run.h5", sb::run_header(config, trainer));
    w.write_in_background(true);
    for (int64_t s = 1; !stop.load(); ++s) {
      w.record(trainer.step());
      w.snapshot(s, weights(trainer));  // lands, on the writer's thread, during the next step
      if (s % 8 == 0) w.commit();
      ++snapshots;
    }
    w.wait_store();
    w.fail("stopped by the test");
  });

  const data::Hdf5Decoder decode = io::isolated_hdf5_decoder();
  const auto start = std::chrono::steady_clock::now();
  double slowest = 0;
  int right = 0;
  for (int k = 0; k < 1000; ++k) {
    const auto t = std::chrono::steady_clock::now();
    right += decode(file, "/tokens", 256) == tokens ? 1 : 0;
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  spinning.join();
  writing.join();
  MESSAGE("1000 reads in ", total, " s (slowest ", slowest, " s) beside ", allocations.load(),
          " allocations in 4 OpenMP threads and ", snapshots.load(), " steps with a background snapshot");
  CHECK(right == 1000);
  CHECK(snapshots.load() > 0);
  CHECK(slowest < 10.0);  // a reader stuck on a lock would sit until its 60 s deadline
}
