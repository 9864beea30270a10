// samebits pack RUN.h5 [RUN.h5 …] OUT/ [--claims CLAIMS.ini] [--gpu-factor F]: the artifact folder an
// evaluator downloads (pack.hpp). Exit 0 packed, 2 error (nothing is overwritten).
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/pack.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits pack RUN.h5 [RUN.h5 ...] OUT/ [--claims CLAIMS.ini] [--gpu-factor F]\n"
    "\n"
    "Writes the artifact an evaluator downloads into OUT/ (a new or empty folder): each finished run\n"
    "as runs/NAME.h5 with its store (kept states, snapshots, final state; every copy's hash checked),\n"
    "its resolved config (runs/NAME.config.ini) and data manifest (runs/NAME.data.tsv); the claims\n"
    "file as CLAIMS.ini with the sweep reports its table claims cite; and EVALUATE.md: the commands\n"
    "and the expected time of each on a 2-core CPU. `samebits verify OUT/` (one run) and\n"
    "`samebits claims check OUT/CLAIMS.ini` work on the folder wherever it is copied.\n"
    "\n"
    "  --claims FILE    a claims file (docs/ARTIFACTS.md) resting on the packed runs; its [claims]\n"
    "                   runs must be 'runs'\n"
    "  --gpu-factor F   a 2-core CPU's step time over the GPU's, for the expected times of runs\n"
    "                   trained on a GPU (default 100, stated in EVALUATE.md)\n"
    "\n"
    "Exit codes: 0 packed, 2 error.\n";

int run_pack(const std::vector<std::string>& args) {
  PackOptions options;
  std::vector<std::string> positional;
  if (!Arguments("pack")
           .text("claims", options.claims)
           .number("gpu-factor", options.gpu_factor)
           .parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(positional.size() >= 2, "expected samebits pack RUN.h5 [RUN.h5 ...] OUT/ (samebits pack --help)");
  options.out = positional.back();
  options.runs.assign(positional.begin(), positional.end() - 1);
  const PackResult r = pack_runs(options);
  std::cout << "packed " << options.runs.size() << " run" << (options.runs.size() == 1 ? "" : "s") << " into "
            << options.out << ": " << r.files.size() << " files, " << (r.bytes + (1 << 19)) / (1 << 20)
            << " MiB; the evaluator starts with " << options.out << "/EVALUATE.md\n";
  return kExitOk;
}

const Registrar kPack{
    {"pack", "the artifact folder an evaluator downloads: runs, states, configs, EVALUATE.md", run_pack}};

}  // namespace
}  // namespace sb::cli
