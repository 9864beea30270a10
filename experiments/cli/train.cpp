// samebits train [CONFIG.ini] [--section.key VALUE …] [--out RUN.h5] [--resume] [--micro-leaves N]
// [--distributed-optimizer] [--print-config]: trains the configured experiment into its run file
// (train_run.hpp). Config errors name the key and exit 2 before anything is written.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/config_grammar.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits train [CONFIG.ini] [--section.key VALUE ...] [--out RUN.h5] [--resume]\n"
    "                      [--init WEIGHTS] [--micro-leaves N] [--distributed-optimizer]\n"
    "                      [--stop-after N] [--trace-steps S[,S2...]] [--print-config]\n"
    "\n"
    "Trains the experiment CONFIG.ini describes (without one: the default experiment, every option\n"
    "at its default) and records it in a run file (docs/FORMAT.md): runs/<experiment id>.h5 unless\n"
    "--out or run.out says otherwise, with snapshots and states in RUN.store/ beside it. Options given\n"
    "on the command line win over the file. A progress bar is drawn when stderr is a terminal\n"
    "(run.progress), plain lines every run.log_every steps otherwise.\n"
    "\n"
    "  --out RUN.h5      the run file (the same as --run.out RUN.h5)\n"
    "  --resume          continue RUN.h5 from its newest good checkpoint (the series are cut back\n"
    "                    to it; the finished file equals an uninterrupted run's); starts the run\n"
    "                    when RUN.h5 does not exist. Without it an existing RUN.h5 is an error.\n"
    "  --init WEIGHTS    start from these weights instead of the seeded initialisation (the same as\n"
    "                    --train.init WEIGHTS): a safetensors file of samebits export (either\n"
    "                    format) or a Hugging Face GPT-2 directory; the experiment holds its content\n"
    "                    hash (docs/EXPORT.md)\n"
    "  --micro-leaves N  leaves per micro-step (accumulation split; 0: all at once). Never changes\n"
    "                    a bit of the results.\n"
    "  --distributed-optimizer  under mpirun: each rank keeps the optimizer state of, and updates,\n"
    "                    only the tensors it owns, and receives only their gradient (an exact\n"
    "                    reduce-scatter; docs/DISTRIBUTED.md §3). Under --parallel.tp: across the\n"
    "                    data-parallel group, the gradient all-reduced there (§10). Never changes a\n"
    "                    bit of the results.\n"
    "  --stop-after N    end this session after step N, as an interruption would (a checkpoint,\n"
    "                    status failed); --resume continues it\n"
    "  --trace-steps S[,S2...]  record the op-hash streams of these steps (one row per op: call\n"
    "                    site, leaf, XXH3-64 of each input and output) into RUN.trace.h5 beside the\n"
    "                    run file (docs/TRACE.md). Never changes a bit of the results.\n"
    "  --print-config    print the resolved configuration (INI) and exit\n"
    "\n"
    "Under mpirun -np N every rank trains its share of the leaves and rank 0 writes the run file;\n"
    "a run may be resumed at another world size. The bits never depend on it.\n"
    "\n"
    "Exit codes: 0 trained, already finished or stopped by --stop-after; 2 error or interrupted\n"
    "(SIGINT/SIGTERM write a checkpoint first; --resume continues). A rank of several that has not\n"
    "reached a step boundary 10 s + twice its longest step after the signal (blocked in a collective:\n"
    "a peer lost) marks the run file interrupted without a checkpoint and exits 2.\n\n";

struct TrainArgs {
  std::string config_path;
  std::vector<std::string> overrides;  // --section.key VALUE tokens for parse_config
  TrainRunOptions run;
  bool print_config = false;
  bool help = false;
};

// --trace-steps S[,S2…]: 1-based steps, each read with the config's integer grammar.
std::vector<int64_t> trace_steps(const std::string& list) {
  std::vector<int64_t> steps;
  if (list.empty()) return steps;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    int64_t step = 0;
    try {
      step = config_value::parse_int(list.substr(at, comma - at));
    } catch (const BadConfigValue& e) {
      SB_FAIL("samebits train --trace-steps '", list, "': expected ", e.expected, " for each step");
    }
    SB_CHECK(step >= 1, "samebits train --trace-steps '", list, "': steps are 1-based (the first is 1)");
    steps.push_back(step);
    at = comma + 1;
  }
  return steps;
}

TrainArgs parse_args(const std::vector<std::string>& args) {
  TrainArgs a;
  std::string out, init, trace;
  std::vector<std::string> positional;
  a.help = !Arguments("train")
                .flag("resume", a.run.resume)
                .flag("print-config", a.print_config)
                .text("out", out)
                .text("init", init)
                .integer("micro-leaves", a.run.micro_leaves, 0)
                .flag("distributed-optimizer", a.run.distributed_optimizer)
                .integer("stop-after", a.run.stop_after, 0)
                .text("trace-steps", trace)
                .hand_on(a.overrides)
                .parse(args, positional);
  if (!out.empty()) a.overrides.push_back("--run.out=" + out);
  if (!init.empty()) a.overrides.push_back("--train.init=" + init);
  a.run.trace_steps = trace_steps(trace);
  SB_CHECK(positional.size() <= 1, "unexpected argument '", positional.back(), "': the config file is '",
           positional.front(), "' (one config file; options are written --section.key VALUE)");
  if (!positional.empty()) a.config_path = positional[0];
  return a;
}

int run_train(const std::vector<std::string>& args) {
  const TrainArgs a = parse_args(args);
  if (a.help) {
    std::cout << kUsage << options_help();
    return kExitOk;
  }
  const Config config = parse_config(a.config_path, a.overrides);
  if (a.print_config) {
    std::cout << to_ini_text(config);
    return kExitOk;
  }
  const TrainRunResult r = train_run(config, a.run, std::cout);
  if (r.interrupted) return kExitError;
  if (r.stopped) return kExitOk;
  if (!r.already_finished && r.rank == 0) {
    std::printf(
        "run %s finished: %lld steps (%lld in this session, %.1f s); %.1f MB written to the run file "
        "and its store\n",
        r.path.c_str(), (long long)r.steps_done, (long long)(r.steps_done - r.first_step), r.seconds,
        double(r.bytes_written) / 1e6);
  }
  return kExitOk;
}

const Registrar kTrain{{"train", "train an experiment into its run file (HDF5), or --resume one", run_train}};

}  // namespace
}  // namespace sb::cli
