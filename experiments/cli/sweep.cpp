// samebits sweep SWEEP.ini [--out DIR] [--set KEY=VALUE …] [--jobs N] [--no-plot] [--list]:
// trains every cell of a sweep file (sweep.hpp) that is not finished, compares each with its
// reference run, prints the table and writes OUT/summary.h5, OUT/report.md and OUT/plots/*.png.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/sweep.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: samebits sweep SWEEP.ini [--out DIR] [--set KEY=VALUE ...] [--jobs N] [--no-plot] [--list]\n"
    "\n"
    "Runs a sweep file (docs/STUDIES.md, 'Sweeps'; examples in experiments/sweeps/): every cell, an\n"
    "execution configuration, numerics switch, seed, optimizer, precision or perturbation applied to\n"
    "the base experiment, is trained into OUT/runs/<cell>.h5 (`samebits train --resume`, under\n"
    "mpirun for ranks = N), compared bitwise with the reference run of its experiment group, and\n"
    "summarised: a table on stdout, OUT/summary.h5, OUT/report.md and OUT/plots/*.png (drawn by\n"
    "python3 -m samebits.analysis.report). Finished runs are skipped, so a rerun only reports, and an\n"
    "interrupted sweep (Ctrl-C, SIGTERM: the running cells checkpoint first) resumes where it was.\n"
    "\n"
    "  --out DIR        the output folder (default: [sweep] out, else runs/sweeps/<file name>)\n"
    "  --set KEY=VALUE  a config override for every cell, applied last (e.g. --set train.steps=20)\n"
    "  --jobs N         cells trained at once (default 1; each uses run.threads threads)\n"
    "  --no-plot        no PNGs\n"
    "  --list           print the cells (name, settings, reference, command) and exit\n"
    "\n"
    "Exit codes: 0 every cell trained and compared (identical or not: the table says), 2 a bad sweep\n"
    "file, a failed cell or an interruption (rerun the same command to resume).\n";

std::string self_binary() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("samebits") : exe.string();
}

int run_sweep(const std::vector<std::string>& args) {
  SweepOptions options;
  options.self_binary = self_binary();
  options.live = ::isatty(STDOUT_FILENO) != 0;
  bool list = false;
  std::vector<std::string> positional;
  if (!Arguments("sweep")
           .text("out", options.out)
           .texts("set", options.set)
           .integer("jobs", options.jobs, 1)
           .flag("no-plot", options.plot, false)
           .flag("list", list)
           .parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  SB_CHECK(positional.size() <= 1, "unexpected argument '", positional.back(), "': the sweep file is '",
           positional.front(), "'");
  const std::string file = positional.empty() ? "" : positional[0];
  SB_CHECK(!file.empty(), "expected a sweep file (samebits sweep experiments/sweeps/quickstart.ini; --help)");
  const SweepSpec spec = load_sweep(file, options);

  if (list) {
    for (const SweepCell& c : spec.cells) {
      std::cout << c.name << ": " << c.describe() << "\n  experiment " << c.experiment_id << ", group " << c.group
                << ", reference " << c.compare_to << "\n  ";
      for (const auto& [k, v] : c.env) std::cout << k << "=" << v << " ";
      for (const std::string& a : cell_command(spec, c, options.self_binary)) std::cout << a << " ";
      std::cout << "\n";
    }
    return kExitOk;
  }

  std::cout << "sweep " << spec.title << ": " << spec.cells.size() << " cells into " << spec.out << "/\n";
  std::cout.flush();
  const std::vector<CellRun> runs = run_cells(spec, options, std::cout);
  bool failed = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].state == "interrupted") {
      std::cout << "sweep interrupted: rerun `samebits sweep " << file << "` (with the same options) to resume\n";
      return kExitError;
    }
    failed = failed || runs[i].state == "failed";
  }

  const std::vector<CellResult> results = compare_cells(spec);
  const Pairwise pairs = spec.pairwise ? compare_pairs(spec) : Pairwise{};
  const Pairwise* pairs_or_null = spec.pairwise ? &pairs : nullptr;
  write_summary(spec, results, pairs_or_null, (fs::path(spec.out) / "summary.h5").string());
  std::string note;
  const std::vector<std::string> pngs =
      spec.plot ? draw_plots(spec, options.self_binary, note) : std::vector<std::string>{};
  const std::string report_path = (fs::path(spec.out) / "report.md").string();
  const std::string report = report_markdown(spec, results, pairs_or_null, pngs, note);
  h5::write_file_atomically(report_path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << report;
    SB_CHECK(out.good(), "cannot write ", tmp);
  });
  std::cout << "\n" << results_table(results) << "\n";
  if (spec.pairwise)
    std::cout << "first divergent step of every pair (=: identical)\n" << pairwise_table(spec, pairs) << "\n";
  if (!note.empty()) std::cout << note << "\n";
  std::cout << "report: " << report_path
            << (pngs.empty() ? "" : " (plots in " + (fs::path(spec.out) / "plots").string() + "/)") << "\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].state == "failed") std::cout << "failed: " << spec.cells[i].name << ": " << runs[i].message << "\n";
  }
  return failed ? kExitError : kExitOk;
}

const Registrar kSweep{
    {"sweep", "train a grid of configurations, compare each with its reference, report with plots", run_sweep}};

}  // namespace
}  // namespace sb::cli
