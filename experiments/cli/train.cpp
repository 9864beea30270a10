// samebits train [CONFIG.ini] [--section.key VALUE …] [--out RUN.h5] [--resume] [--micro-leaves N]
// [--distributed-optimizer] [--print-config]: trains the configured experiment into its run file
// (train_run.hpp). Config errors name the key and exit 2 before anything is written.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "samebits/cli/command.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/cli/train_run.hpp"
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
    "                    reduce-scatter; docs/DISTRIBUTED.md §3). Never changes a bit of the results.\n"
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
    "(SIGINT/SIGTERM write a checkpoint first; --resume continues).\n\n";

struct TrainArgs {
  std::string config_path;
  std::vector<std::string> overrides;  // --section.key VALUE tokens for parse_config
  TrainRunOptions run;
  bool print_config = false;
  bool help = false;
};

int parse_count(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SB_CHECK(used == text.size() && value >= 0, flag, " '", text, "' must be a non-negative integer");
  return value;
}

TrainArgs parse_args(const std::vector<std::string>& args) {
  TrainArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::size_t eq = arg.find('=');
    const std::string flag = arg.substr(0, eq);
    // The value of a flag: after '=' or the next token.
    const auto value = [&]() -> std::string {
      if (eq != std::string::npos) return arg.substr(eq + 1);
      SB_CHECK(i + 1 < args.size(), flag, " needs a value (samebits train --help)");
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      a.help = true;
    } else if (arg == "--resume") {
      a.run.resume = true;
    } else if (arg == "--print-config") {
      a.print_config = true;
    } else if (flag == "--out") {
      a.overrides.push_back("--run.out=" + value());
    } else if (flag == "--init") {
      a.overrides.push_back("--train.init=" + value());
    } else if (flag == "--micro-leaves") {
      a.run.micro_leaves = parse_count(flag, value());
    } else if (arg == "--distributed-optimizer") {
      a.run.distributed_optimizer = true;
    } else if (flag == "--stop-after") {
      a.run.stop_after = parse_count(flag, value());
    } else if (flag == "--trace-steps") {
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const int step = parse_count(flag, list.substr(at, comma - at));
        SB_CHECK(step >= 1, flag, " '", list, "': steps are 1-based (the first is 1)");
        a.run.trace_steps.push_back(step);
        at = comma + 1;
      }
    } else if (arg.rfind("--", 0) == 0) {
      a.overrides.push_back(arg);
      if (eq == std::string::npos && i + 1 < args.size()) a.overrides.push_back(args[++i]);
    } else {
      SB_CHECK(arg.empty() || arg.front() != '-', "unknown option '", arg, "' (samebits train --help)");
      SB_CHECK(a.config_path.empty(), "unexpected argument '", arg, "': the config file is '", a.config_path,
               "' (one config file; options are written --section.key VALUE)");
      a.config_path = arg;
    }
  }
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
    std::printf("run %s finished: %lld steps (%lld in this session, %.1f s); %.1f MB written to the run file "
                "and its store\n", r.path.c_str(), (long long)r.steps_done, (long long)(r.steps_done - r.first_step),
                r.seconds, double(r.bytes_written) / 1e6);
  }
  return kExitOk;
}

const Registrar kTrain{{"train", "train an experiment into its run file (HDF5), or --resume one", run_train}};

}  // namespace
}  // namespace sb::cli
