// samebits diff A.h5 B.h5 [--json]: compares two run files (diff.hpp). Exit 0 identical,
// 1 different, 2 error (a missing, damaged or foreign file).
#include <iostream>

#include "samebits/cli/command.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits diff A.h5 B.h5 [--json]\n"
    "\n"
    "Compares two run files: whether they are the same experiment (and which fields differ), the\n"
    "first step where any recorded bit differs (which series, which tensors' parameter and gradient\n"
    "fingerprints), the loss gap over the steps, and at every step where both files hold the\n"
    "parameters (snapshots, final states) each tensor's fraction of differing elements, max ULP\n"
    "distance and relative L2 distance. Communication traffic and wall time are not compared.\n"
    "\n"
    "  --json   the same as one JSON object (loss_gap: one value per compared step)\n"
    "\n"
    "Exit codes: 0 identical, 1 different, 2 error.\n";

int run_diff(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool json = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    }
    if (a == "--json") {
      json = true;
    } else {
      SB_CHECK(a.rfind("-", 0) != 0, "unknown option '", a, "' (samebits diff --help)");
      files.push_back(a);
    }
  }
  SB_CHECK(files.size() == 2, "expected two run files, got ", files.size(), " (samebits diff A.h5 B.h5)");
  const run::RunReader a = run::RunReader::open(files[0]);
  const run::RunReader b = run::RunReader::open(files[1]);
  const RunDiff d = diff_runs(a, b);
  std::cout << (json ? diff_json(d) : diff_text(d));
  return d.identical() ? kExitOk : kExitDifferent;
}

const Registrar kDiff{{"diff", "compare two run files: first divergent step, per-tensor ULP table (exit 0 = identical)",
                       run_diff}};

}  // namespace
}  // namespace sb::cli
