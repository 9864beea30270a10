// samebits inspect RUN.h5: what a run is (experiment, status, steps, losses, snapshots,
// checkpoints, execution, build, host). A damaged or foreign file is one clear error, exit 2.
#include <iostream>

#include "samebits/cli/command.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits inspect RUN.h5\n"
    "\n"
    "Prints what the run is (experiment id and summary), its status (running, finished, failed\n"
    "and why), the steps recorded, the first and last loss and the last validation loss, the final\n"
    "state, the snapshots, the states in the store RUN.store/ (each read and checked), and where and\n"
    "how it ran (execution, build, fp environment, host, sessions). Exit 0, or 2 when the file is\n"
    "missing, damaged or not a samebits run file.\n";

int run_inspect(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(args.size() == 1 && args[0].rfind("-", 0) != 0, "expected one run file (samebits inspect RUN.h5)");
  std::cout << describe_run(run::RunReader::open(args[0]));
  return kExitOk;
}

const Registrar kInspect{
    {"inspect", "show what a run file holds: experiment, status, steps, loss, checkpoints", run_inspect}};

}  // namespace
}  // namespace sb::cli
