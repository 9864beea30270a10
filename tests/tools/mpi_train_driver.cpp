// mpi_train_driver: runs the Trainer on a tiny GPT in this process's communicator (MPI under
// mpirun, local otherwise) and prints, on rank 0, one line of fingerprints per step and the final
// state's — lines that must be identical for every world size (docs/CONTRACT.md: the distribution
// axis). Lines starting with '#' describe the execution (world size, bytes, times) and differ.
// Also: save/resume a checkpoint (elastic resume), and fail on purpose (failure handling tests).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "samebits/cli/options.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/core/parallel/launch.hpp"
#include "samebits/core/parallel/mpi.hpp"
#include "samebits/core/parallel/sharded_optimizer.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/bits.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"
#include "support/tiny_gpt.hpp"

namespace {

struct Args {
  sb::Config config;
  sb::TrainerOptions options;
  int64_t save_after = -1;  // export the state after this many steps, write it, stop
  std::string save, resume;
  int fail_rank = -1;
  int64_t fail_step = -1;
  std::string fail_mode;           // kill | error | error-abort
  bool bench = false;              // no statistics or fingerprints; timing and traffic lines
  int collective_reps = 0;         // > 0: time the gradient all-reduce alone, exact vs native, and stop
  bool check_collectives = false;  // check MAX and reduce-scatter against their definitions, stop
  bool staged = false;             // the collectives on host copies through the backend (parallel/launch.hpp)
};

const char* const kUsage =
    "usage: mpi_train_driver [--config FILE.ini] [--precision fp32|bf16|fp16] [--optim muon|adamw|normuon]\n"
    "  [--muon-variants]\n"
    "  [--adaptive-lr]\n"
    "  [--dist-optimizer] [--staged] [--allreduce exact|native] [--leaf-sum exact|native] [--steps N] [--warmup N] "
    "[--layers L]\n"
    "  [--width C] [--heads H] [--seq T] [--vocab V] [--leaves N] [--leaf-size S] [--threads N]\n"
    "  [--save-after K --save FILE] [--resume FILE]\n"
    "  [--fail-rank R --fail-step S --fail-mode kill|error|error-abort] [--bench]\n"
    "  [--bench-collectives REPS] [--check-collectives]\n";

Args parse(int argc, char** argv) {
  Args a;
  sb::Config& c = a.config;
  c = sb::test::tiny_gpt_config({.leaves = 12, .steps = 8, .eval_every = 4, .eval_leaves = 3});
  c.optim.momentum_warmup = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      SB_CHECK(i + 1 < argc, "option ", k, " needs a value\n", kUsage);
      return argv[++i];
    };
    if (k == "--config") {  // an experiment file (samebits train's), instead of the tiny GPT
      c = sb::cli::parse_config(value(), {});
    } else if (k == "--precision") {
      const auto p = sb::config_enum<sb::Precision>(value());
      SB_CHECK(p.has_value(), "--precision takes fp32, bf16 or fp16");
      c.train.precision = *p;
    } else if (k == "--optim") {
      const auto o = sb::config_enum<sb::OptimizerName>(value());
      SB_CHECK(o.has_value(), "--optim takes muon, normuon or adamw");
      c.optim.name = *o;
      if (*o == sb::OptimizerName::adamw) c.optim.lr = 3e-3;
    } else if (k == "--allreduce") {
      const auto m = sb::config_enum<sb::AllreduceMode>(value());
      SB_CHECK(m.has_value(), "--allreduce takes exact or native");
      c.numerics.allreduce = *m;
    } else if (k == "--leaf-sum") {
      const auto m = sb::config_enum<sb::LeafSumMode>(value());
      SB_CHECK(m.has_value(), "--leaf-sum takes exact or native");
      c.numerics.leaf_sum = *m;
    } else if (k == "--muon-variants") {  // docs/OPTIM.md §1.1, all at once
      c.optim.name = sb::OptimizerName::normuon;
      c.optim.split_qkv = true;
      c.optim.cautious_wd = true;
      c.optim.weight_decay = 0.1;
      c.optim.qk_clip = 0.03;
    } else if (k == "--adaptive-lr") {  // train.schedule = adaptive (optim/adaptive_lr.hpp)
      c.train.schedule = sb::Schedule::adaptive;
    } else if (k == "--dist-optimizer") {
      a.options.distributed_optimizer = true;
    } else if (k == "--staged") {
      a.staged = true;
    } else if (k == "--steps") {
      c.train.steps = std::stoll(value());
    } else if (k == "--warmup") {
      c.train.warmup = std::stoll(value());
    } else if (k == "--layers") {
      c.model.n_layer = std::stoi(value());
    } else if (k == "--width") {
      c.model.n_embd = std::stoi(value());
    } else if (k == "--heads") {
      c.model.n_head = std::stoi(value());
    } else if (k == "--seq") {
      c.model.seq_len = std::stoi(value());
    } else if (k == "--vocab") {
      c.model.vocab = std::stoi(value());
    } else if (k == "--leaves") {
      c.data.leaves = std::stoll(value());
    } else if (k == "--leaf-size") {
      c.data.leaf_size = std::stoll(value());
    } else if (k == "--threads") {
      c.run.threads = std::stoll(value());
    } else if (k == "--save-after") {
      a.save_after = std::stoll(value());
    } else if (k == "--save") {
      a.save = value();
    } else if (k == "--resume") {
      a.resume = value();
    } else if (k == "--fail-rank") {
      a.fail_rank = std::stoi(value());
    } else if (k == "--fail-step") {
      a.fail_step = std::stoll(value());
    } else if (k == "--fail-mode") {
      a.fail_mode = value();
    } else if (k == "--check-collectives") {
      a.check_collectives = true;
    } else if (k == "--bench-collectives") {
      a.collective_reps = std::stoi(value());
    } else if (k == "--bench") {
      a.bench = true;
      a.options.statistics = false;
      a.options.fingerprints = false;
      a.options.check_replicas = false;
      c.train.eval_every = 0;
    } else {
      SB_FAIL("unknown option ", k, "\n", kUsage);
    }
  }
  SB_CHECK((a.save_after >= 0) == !a.save.empty(), "--save-after and --save go together");
  return a;
}

// ---- a checkpoint file of this tool (the run store writes the real ones) -------------------

template <class T>
void put(std::ofstream& f, const T& v) {
  f.write(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <class T>
T get(std::ifstream& f) {
  T v{};
  f.read(reinterpret_cast<char*>(&v), sizeof(T));
  return v;
}
void put_floats(std::ofstream& f, const std::vector<float>& v) {
  put(f, uint64_t{v.size()});
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
}
std::vector<float> get_floats(std::ifstream& f) {
  std::vector<float> v(get<uint64_t>(f));
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  return v;
}

void write_state(const std::string& path, const sb::TrainerState& s) {
  std::ofstream f(path, std::ios::binary);
  SB_CHECK(f.good(), "cannot write ", path);
  put(f, s.step);
  put(f, s.updates);
  put(f, s.cursor);
  put(f, s.loss_scale);
  put_floats(f, s.weights);
  put(f, uint64_t{s.optimizer.size()});
  for (const sb::StateArray& a : s.optimizer) {
    put(f, uint64_t{a.name.size()});
    f.write(a.name.data(), std::streamsize(a.name.size()));
    put_floats(f, a.data);
  }
  SB_CHECK(f.good(), "writing ", path, " failed");
}

sb::TrainerState read_state(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SB_CHECK(f.good(), "cannot read ", path);
  sb::TrainerState s;
  s.step = get<int64_t>(f);
  s.updates = get<int64_t>(f);
  s.cursor = get<sb::data::DataCursor>(f);
  s.loss_scale = get<sb::LossScaleState>(f);
  s.weights = get_floats(f);
  s.optimizer.resize(get<uint64_t>(f));
  for (sb::StateArray& a : s.optimizer) {
    a.name.resize(get<uint64_t>(f));
    f.read(a.name.data(), std::streamsize(a.name.size()));
    a.data = get_floats(f);
  }
  SB_CHECK(f.good(), path, " is truncated");
  return s;
}

// ---- what the lines hold ----------------------------------------------------------------------

template <class T>
void append(std::vector<unsigned char>& out, const T& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Every statistic of the step, bit for bit.
uint64_t stats_fingerprint(const sb::StepStats& s) {
  std::vector<unsigned char> b;
  append(b, s.step);
  append(b, s.loss);
  append(b, s.val_loss);
  append(b, s.lr);
  append(b, s.adam_lr);
  append(b, s.muon_momentum);
  append(b, s.grad_norm);
  append(b, s.clip_scale);
  append(b, s.loss_scale);
  append(b, s.skipped);
  append(b, s.leaf_sq_mean);
  append(b, s.batch_sq);
  append(b, s.grad_sq_est);
  append(b, s.trace_est);
  append(b, s.noise_scale);
  for (const sb::TensorStats& t : s.tensors) append(b, t);
  return sb::det::fingerprint(b.data(), b.size());
}

uint64_t list_fingerprint(const std::vector<uint64_t>& v) {
  return sb::det::fingerprint(v.data(), v.size() * sizeof(uint64_t));
}

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

void print_traffic(int64_t step, const sb::CommCounters& c, double seconds) {
  std::printf("# traffic step %lld seconds %.6f total_bytes %llu received %llu", static_cast<long long>(step), seconds,
              static_cast<unsigned long long>(c.total_bytes()), static_cast<unsigned long long>(c.total_received()));
  for (size_t k = 0; k < sb::kCollectiveKinds; ++k) {
    if (c.calls[k] == 0) continue;
    std::printf(" %s=%llux%llu", std::string(sb::to_string(static_cast<sb::Collective>(k))).c_str(),
                static_cast<unsigned long long>(c.calls[k]), static_cast<unsigned long long>(c.bytes[k]));
  }
  std::printf("\n");
}

uint64_t state_fingerprint(const sb::TrainerState& s) {
  std::vector<unsigned char> b;
  for (const sb::StateArray& a : s.optimizer) {
    b.insert(b.end(), a.name.begin(), a.name.end());
    const auto* p = reinterpret_cast<const unsigned char*>(a.data.data());
    b.insert(b.end(), p, p + a.data.size() * sizeof(float));
  }
  return sb::det::fingerprint(b.data(), b.size());
}

// The fastest of `reps` runs of `collective` (rank 0's wall time; each run starts after a barrier,
// and a collective ends on every rank only when all have joined it).
template <class F>
double fastest_of(int reps, sb::Communicator& comm, const F& collective) {
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    comm.barrier();
    const auto start = std::chrono::steady_clock::now();
    collective();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = i == 0 ? s : std::min(best, s);
  }
  return best;
}

// The gradient all-reduce of this model alone, on a real gradient (the last leaf's of one step):
// the exact one (parallel/exact_allreduce.hpp: block ranges, wire words, SUM, decode) and the native
// one (floats, float SUM). Bytes are the payload of one all-reduce; the fastest run of each
// resists the noise of a shared machine (the accumulator is refilled, untimed, before each run).
int bench_collectives(sb::Trainer& trainer, sb::Communicator& comm, int reps) {
  trainer.step();
  const size_t n = trainer.model().flat_size();
  const float* g = trainer.model().grads().data_as<float>();  // (n)
  std::unique_ptr<sb::GradAccumulator> acc = trainer.backend().make_accumulator(n);
  std::vector<float> floats(g, g + n);  // (n)
  double exact = 0;
  uint64_t exact_bytes = 0;
  for (int i = 0; i < reps; ++i) {
    acc->clear();
    acc->add(g);
    const sb::CommCounters before = comm.counters();
    comm.barrier();
    const auto start = std::chrono::steady_clock::now();
    sb::exact_allreduce(*acc, comm, static_cast<uint64_t>(comm.size()), 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    exact = i == 0 ? s : std::min(exact, s);
    exact_bytes = (comm.counters() - before).total_bytes();
  }
  const double native = fastest_of(reps, comm, [&] { comm.allreduce_sum_f32(floats.data(), n); });
  if (comm.rank() == 0) {
    std::printf(
        "# collectives world %d exact_bytes %llu exact_seconds %.6f native_bytes %zu "
        "native_seconds %.6f accumulator_bytes %zu\n",
        comm.size(), static_cast<unsigned long long>(exact_bytes), exact, n * sizeof(float), native,
        acc->memory_bytes());
  }
  return 0;
}

// allreduce_max_u8 and reduce_scatter_sum_u64 against their definitions, with uneven parts (rank
// r receives r + 1 values, plus an empty part at 4 ranks or more when the last gets none): prints
// "# collectives ok" on rank 0 or throws.
int check_collectives(sb::Communicator& comm) {
  const int w = comm.size(), me = comm.rank();
  std::vector<uint8_t> bytes = {static_cast<uint8_t>(me * 40), static_cast<uint8_t>(200 - me), 3};
  comm.allreduce_max_u8(bytes.data(), bytes.size());
  SB_CHECK(bytes[0] == (w - 1) * 40 && bytes[1] == 200 && bytes[2] == 3, "allreduce_max_u8 gave ", int(bytes[0]), " ",
           int(bytes[1]), " ", int(bytes[2]));
  std::vector<size_t> counts(static_cast<size_t>(w));
  for (int r = 0; r < w; ++r) counts[size_t(r)] = r == 3 ? 0 : static_cast<size_t>(r + 1);
  size_t total = 0, offset = 0;
  for (int r = 0; r < w; ++r) {
    if (r < me) offset += counts[size_t(r)];
    total += counts[size_t(r)];
  }
  // Values and sums beyond 2^63, wrapping modulo 2^64: an unsigned SUM (an int64 one would overflow).
  std::vector<uint64_t> x(total);
  for (size_t i = 0; i < total; ++i) x[i] = (uint64_t{1} << 63) / 2 * uint64_t(me + 3) - i * uint64_t(me);
  comm.reduce_scatter_sum_u64(x.data(), counts.data());
  for (size_t i = offset; i < offset + counts[size_t(me)]; ++i) {
    uint64_t want = 0;
    for (int r = 0; r < w; ++r) want += (uint64_t{1} << 63) / 2 * uint64_t(r + 3) - i * uint64_t(r);
    SB_CHECK(x[i] == want, "reduce_scatter_sum_u64 on rank ", me, ": element ", i, " is ", x[i], ", expected ", want);
  }
  comm.barrier();
  if (me == 0) std::printf("# collectives ok world %d\n", w);
  return 0;
}

int train(const Args& a, sb::Backend& backend, sb::Communicator& comm) {
  if (a.check_collectives) return check_collectives(comm);
  sb::Trainer trainer(a.config, backend, comm, a.options);
  const bool root = comm.rank() == 0;
  if (!a.resume.empty()) {
    sb::TrainerState s;
    if (root) s = read_state(a.resume);  // rank 0 reads; import_state delivers it to every rank
    trainer.import_state(s);
  }
  const std::vector<uint64_t> state_bytes = sb::state_bytes_per_rank(trainer.optimizer(), comm);
  if (root) {
    std::printf("# world %d (%s) distributed_optimizer %d allreduce %s\n# optimizer_state_bytes", comm.size(),
                comm.describe().c_str(), a.options.distributed_optimizer ? 1 : 0,
                std::string(sb::config_name(a.config.numerics.allreduce)).c_str());
    for (uint64_t b : state_bytes) std::printf(" %llu", static_cast<unsigned long long>(b));
    std::printf("\n");
    std::fflush(stdout);
  }
  if (a.collective_reps > 0) return bench_collectives(trainer, comm, a.collective_reps);
  double seconds = 0, fastest = 0;
  double flush = 0, blocked = 0;  // a pipeline stage's flushes and transfers in the timed steps
  uint64_t bytes = 0;
  std::vector<uint64_t> received(sb::kCollectiveKinds, 0);  // per kind, of the timed steps
  int64_t timed = 0;
  while (!trainer.finished()) {
    if (comm.rank() == a.fail_rank && trainer.steps_done() == a.fail_step) {
      if (a.fail_mode == "kill") std::raise(SIGKILL);
      SB_FAIL("a deliberate failure on rank ", comm.rank(), " before step ", a.fail_step + 1, " (--fail-rank)");
    }
    const sb::PipeGroup* pipe = trainer.model().pipe();
    const sb::PipeTimes before = pipe != nullptr ? pipe->times : sb::PipeTimes{};
    const sb::StepResult r = trainer.step();
    if (root && !a.bench) {
      std::printf("step %lld loss %08x val %08x params %016llx grads %016llx stats %016llx\n",
                  static_cast<long long>(r.stats.step), bits_of(r.stats.loss), bits_of(r.stats.val_loss),
                  static_cast<unsigned long long>(list_fingerprint(r.param_fingerprints)),
                  static_cast<unsigned long long>(list_fingerprint(r.grad_fingerprints)),
                  static_cast<unsigned long long>(stats_fingerprint(r.stats)));
    }
    if (root) print_traffic(r.stats.step, r.comm, r.seconds);
    if (r.stats.step > 1) {  // the first step warms caches and allocations
      seconds += r.seconds;
      fastest = timed == 0 ? r.seconds : std::min(fastest, r.seconds);
      bytes += r.comm.total_bytes();
      for (size_t k = 0; k < sb::kCollectiveKinds; ++k) received[k] += r.comm.received[k];
      if (pipe != nullptr) {
        flush += pipe->times.flush - before.flush;
        blocked += pipe->times.blocked - before.blocked;
      }
      ++timed;
    }
    std::fflush(stdout);
    if (trainer.steps_done() == a.save_after) {
      const sb::TrainerState s = trainer.export_state();
      if (root) write_state(a.save, s);
      return 0;
    }
  }
  if (a.bench) {  // every rank's model buffers after the steps (activations: every slot its pipeline
                  // schedule kept in flight): "# memory rank R weights W grads G activations A"
    sb::GPT& m = trainer.model();
    const std::vector<uint64_t> mine{m.weights().bytes(), m.grads().bytes(), m.activation_bytes()};
    std::vector<uint64_t> all(3 * static_cast<size_t>(comm.size()));
    comm.allgather_u64(mine.data(), 3, all.data());
    for (int q = 0; root && q < comm.size(); ++q)
      std::printf("# memory rank %d weights %llu grads %llu activations %llu\n", q,
                  static_cast<unsigned long long>(all[3 * size_t(q)]),
                  static_cast<unsigned long long>(all[3 * size_t(q) + 1]),
                  static_cast<unsigned long long>(all[3 * size_t(q) + 2]));
  }
  if (a.bench && trainer.model().pipe() != nullptr) {  // "# pipe rank R stage S flush F blocked B" (seconds)
    const std::vector<uint64_t> mine{uint64_t(trainer.model().pipe()->stage()), sb::det::bits_of(flush),
                                     sb::det::bits_of(blocked)};
    std::vector<uint64_t> all(3 * static_cast<size_t>(comm.size()));
    comm.allgather_u64(mine.data(), 3, all.data());
    for (int q = 0; root && q < comm.size(); ++q)
      std::printf("# pipe rank %d stage %llu flush %.6f blocked %.6f\n", q,
                  static_cast<unsigned long long>(all[3 * size_t(q)]), sb::det::double_of_bits(all[3 * size_t(q) + 1]),
                  sb::det::double_of_bits(all[3 * size_t(q) + 2]));
  }
  if (!a.bench) {  // (a bench gathers no full tensors: its memory is the buffers above)
    const sb::TrainerState s = trainer.export_state();
    if (root) {
      std::printf("final weights %016llx optimizer %016llx\n",
                  static_cast<unsigned long long>(sb::det::fingerprint(s.weights.data(), s.weights.size())),
                  static_cast<unsigned long long>(state_fingerprint(s)));
    }
  }
  // Every rank's received bytes per timed step, per kind (ranks receive different parts of a
  // reduce-scatter and of the owners' broadcasts): "# received rank R total B kind=B …".
  for (uint64_t& b : received) b = timed > 0 ? b / uint64_t(timed) : 0;
  std::vector<uint64_t> received_by(sb::kCollectiveKinds * static_cast<size_t>(comm.size()));
  comm.allgather_u64(received.data(), received.size(), received_by.data());
  if (root && timed > 0) {
    for (int q = 0; q < comm.size(); ++q) {
      const uint64_t* b = received_by.data() + size_t(q) * sb::kCollectiveKinds;
      uint64_t total = 0;
      for (size_t k = 0; k < sb::kCollectiveKinds; ++k) total += b[k];
      std::printf("# received rank %d total %llu", q, static_cast<unsigned long long>(total));
      for (size_t k = 0; k < sb::kCollectiveKinds; ++k) {
        if (b[k] == 0) continue;
        std::printf(" %s=%llu", std::string(sb::to_string(static_cast<sb::Collective>(k))).c_str(),
                    static_cast<unsigned long long>(b[k]));
      }
      std::printf("\n");
    }
    uint64_t most = 0;
    for (uint64_t b : state_bytes) most = std::max(most, b);
    std::printf(
        "# summary world %d seconds_per_step %.6f bytes_per_step %llu "
        "optimizer_state_bytes_max %llu fastest_step %.6f\n",
        comm.size(), seconds / double(timed), static_cast<unsigned long long>(bytes / uint64_t(timed)),
        static_cast<unsigned long long>(most), fastest);
  }
  return 0;
}

int run(const Args& a) {
  // As in the samebits CLI: an error leaves train() by exception, the communicator is destroyed
  // while unwinding (no MPI_Finalize), main prints the message and exits non-zero, and mpirun
  // ends the other ranks. error-abort: the error is caught here and end_job_on_error aborts.
  const std::unique_ptr<sb::Backend> backend = sb::make_cpu_backend(sb::to_numerics(a.config));
  std::unique_ptr<sb::Communicator> comm = sb::make_communicator_from_environment();
  if (a.staged) comm = sb::make_staged_communicator(std::move(comm), *backend);
  if (a.fail_mode != "error-abort") return train(a, *backend, *comm);
  try {
    return train(a, *backend, *comm);
  } catch (const std::exception& e) {
    sb::end_job_on_error(*comm, e.what(), 3);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_train_driver: error: %s\n", e.what());
    return 2;
  }
}
