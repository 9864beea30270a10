// samebits trace A.h5 B.h5 [--step S] [--out DIR]: the first op at which two runs of one
// experiment part (trace.hpp, docs/TRACE.md). Exit 0 identical, 1 divergence found, 2 error.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/trace.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits trace A.h5 B.h5 [--step S] [--out DIR]\n"
    "\n"
    "Names the first operation at which two runs of one experiment part, bitwise. Takes the runs'\n"
    "first divergent step S (or --step S; step 1 when they do not diverge), reaches the state after\n"
    "step S-1 from A (its latest kept state, then its steps replayed and checked against its recorded\n"
    "fingerprints), replays step S under each run's recorded configuration (numerics, threads,\n"
    "micro-leaves; an N-rank run on N simulated ranks in this process), recording one row per op:\n"
    "its call site, leaf, the XXH3-64 of each input and output. Prints the origin - the first op\n"
    "whose output differs while its inputs are equal (or the first reader of a tensor that differs\n"
    "on entry, as after a perturbation) - with its ULP distance and fraction of differing elements,\n"
    "then the propagation op by op. The runs may differ only in numerics.*, perturb.* and\n"
    "train.precision.\n"
    "\n"
    "  --step S    trace step S (1-based) instead of the first divergent one\n"
    "  --out DIR   write DIR/report.md (origin and the whole propagation table) and\n"
    "              DIR/propagation.tsv (the table, for samebits.analysis.load_propagation)\n"
    "\n"
    "Exit codes: 0 identical (every op of the step equal, no divergent step), 1 divergence found,\n"
    "2 error (runs of different experiments, a step with no reachable state).\n";

struct Options {
  std::vector<std::string> files;
  int64_t step = 0;
  std::string out;
  bool help = false;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  o.help = !Arguments("trace").integer("step", o.step, 1).text("out", o.out).parse(args, o.files);
  if (o.help) return o;
  SB_CHECK(o.files.size() == 2, "samebits trace expects two run files, got ", o.files.size(),
           " (samebits trace A.h5 B.h5 [--step S] [--out DIR])");
  return o;
}

int run_trace(const std::vector<std::string>& args) {
  const Options o = parse(args);
  if (o.help) {
    std::cout << kUsage;
    return kExitOk;
  }
  TraceOptions options;
  options.step = o.step;
  const TraceResult r = trace_runs(o.files[0], o.files[1], options);
  std::cout << trace_text(r);
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    for (const auto& [name, text] :
         {std::pair{"report.md", trace_markdown(r)}, std::pair{"propagation.tsv", trace_tsv(r)}}) {
      const std::string path = (std::filesystem::path(o.out) / name).string();
      std::ofstream file(path);
      file << text;
      SB_CHECK(file.good(), "samebits trace: could not write ", path);
    }
    std::cout << "report: " << (std::filesystem::path(o.out) / "report.md").string() << "\n";
  }
  return r.identical() ? kExitOk : kExitDifferent;
}

const Registrar kTrace{{"trace", "name the first op at which two runs part, bitwise (exit 0 = identical)", run_trace}};

}  // namespace
}  // namespace sb::cli
