// pack.hpp: OUT/runs/NAME.h5 and NAME.store/ copied byte for byte (each store file's seal checked
// against the index), NAME.config.ini and NAME.data.tsv beside them, CLAIMS.ini and the reports
// its table claims read, and EVALUATE.md: expected times are the recorded step seconds × a stated
// factor (a CPU run's threads over 2 cores; --gpu-factor for a GPU run).
#include "samebits/cli/pack.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "samebits/cli/claims.hpp"
#include "samebits/cli/verify_budget.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/build_info.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

void copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  fs::copy_file(from, to, fs::copy_options::none, ec);
  SB_CHECK(!ec, "cannot copy '", from.string(), "' to '", to.string(), "': ", ec.message());
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  SB_CHECK(out.good(), "cannot write '", path.string(), "'");
}

struct Packed {
  std::string name;  // NAME of runs/NAME.h5
  std::string experiment, backend;
  bool gpu = false;
  int64_t threads = 0, world = 1, steps = 0;
  double factor = 1;            // to a 2-core CPU
  std::vector<double> seconds;  // recorded step times
  std::vector<int64_t> kept;    // window starts after 0
  bool data_files = false;      // trained on files (not the synthetic language)
  std::string data;             // the manifest
};

Packed pack_one(const std::string& path, const fs::path& runs, double gpu_factor, PackResult& result) {
  const run::RunReader run = run::RunReader::open(path);
  const run::RunInfo& i = run.info();
  SB_CHECK(i.status == run::Status::finished, "cannot pack '", path, "': its status is ", to_string(i.status),
           " (pack a finished run: its store then holds only kept states, snapshots and the final state)");
  Packed p;
  p.name = fs::path(path).stem().string();
  const fs::path target = runs / (p.name + ".h5");
  SB_CHECK(!fs::exists(target), "cannot pack '", path, "': a run named ", p.name, " is already in ", runs.string());
  copy_into(path, target);
  for (const run::StoreEntry& e : run.store_entries()) {
    const fs::path to = fs::path(run::store_file(target.string(), e));
    copy_into(run::store_file(path, e), to);
    SB_CHECK(run::check_seal(to.string()) == e.digest, "the copy '", to.string(), "' does not hash to the index's ",
             "digest of its source ", run::store_file(path, e));
    result.bytes += e.bytes;
    result.files.push_back((fs::path("runs") / fs::relative(to, runs)).string());
    if ((e.kind & run::kKeptBit) && e.step > 0 && e.step < run.steps_recorded()) p.kept.push_back(e.step);
  }
  result.bytes += fs::file_size(target);
  result.files.push_back("runs/" + p.name + ".h5");
  write_text(runs / (p.name + ".config.ini"), i.config_text);
  write_text(runs / (p.name + ".data.tsv"),
             "# role\tbytes\txxh3-64\tpath (docs/FORMAT.md, data provenance)\n" + i.data_files);
  result.files.push_back("runs/" + p.name + ".config.ini");
  result.files.push_back("runs/" + p.name + ".data.tsv");
  p.experiment = i.experiment_id;
  p.backend = escape_untrusted(i.execution.backend);
  p.gpu = i.execution.backend.rfind("cuda", 0) == 0;
  p.threads = i.execution.threads;
  p.world = i.execution.world_size;
  p.steps = run.steps_recorded();
  p.factor = p.gpu ? gpu_factor : std::max(1.0, double(p.threads * p.world) / 2.0);
  p.seconds = run.series<double>("timing/step_seconds");
  p.data = i.data_files;
  p.data_files = i.data_files.find("\tsynthetic:") == std::string::npos && !i.data_files.empty();
  return p;
}

double window_seconds(const Packed& p, int64_t from, int64_t steps) {
  return p.factor * std::accumulate(p.seconds.begin() + from, p.seconds.begin() + from + steps, 0.0);
}

std::string evaluate_markdown(const std::vector<Packed>& runs, const std::string& claims, double gpu_factor) {
  std::ostringstream s;
  s << "# Evaluating this artifact\n\n"
    << "Packed by `samebits pack` (samebits " << build::kVersion << ", commit " << build::kGitCommit << "). "
    << "Build that samebits (`scripts/quickstart` builds it and runs its self-test); the contract — the same bits "
       "on every machine, thread count, world size and backend — holds for one samebits version, and the verdicts "
       "below allow a variation of zero.\n\n"
    << "Every run is in `runs/`: `NAME.h5` (the run file), `NAME.store/` (its kept states, snapshots and final "
       "state), `NAME.config.ini` (the resolved configuration), `NAME.data.tsv` (name, size and XXH3-64 digest of "
       "every data file; `verify` compares them before the first step).\n\n"
    << "Expected times are for a 2-core CPU: the recorded step times × a stated factor — a run trained on a CPU "
       "× (its threads × ranks) / 2 (at least 1), a run trained on a GPU × "
    << gpu_factor
    << " (`pack --gpu-factor`, an assumption). `verify --budget` measures this machine's step before it plans, "
       "so its time is the budget whatever the factor.\n\n"
    << "| command | what it checks | expected on a 2-core CPU |\n|---|---|---|\n";
  if (!claims.empty()) {
    s << "| `samebits claims check CLAIMS.ini --budget 10m` | every claim of `CLAIMS.ini` against the run files, then "
         "the runs they rest on, bit for bit, within 10 minutes | 10m |\n";
  }
  for (const Packed& p : runs) {
    const std::string run = "runs/" + p.name + ".h5";
    s << "| `samebits inspect " << run << "` | what the run is: experiment, status, who trained it where, environment, "
      << "data | seconds |\n"
      << "| `samebits verify " << run << " --budget 10m --report " << p.name << "-report.md` | windows chosen to fit "
      << "10 minutes (another `--seed`, other windows), each bit for bit; the report | 10m |\n"
      << "| `samebits verify " << run << "` | all " << p.steps << " steps from the start | "
      << duration_spec(window_seconds(p, 0, p.steps)) << " |\n";
    std::vector<int64_t> starts{0};
    starts.insert(starts.end(), p.kept.begin(), p.kept.end());
    for (std::size_t k = 1; k < starts.size(); ++k) {
      const int64_t next = k + 1 < starts.size() ? starts[k + 1] : p.steps;
      s << "| `samebits verify " << run << " --from " << starts[k] << " --steps " << next - starts[k] << "` | steps "
        << starts[k] + 1 << "-" << next << " from the kept state of step " << starts[k] << " | "
        << duration_spec(window_seconds(p, starts[k], next - starts[k])) << " |\n";
    }
  }
  s << "\n## The runs\n\n| run | experiment | steps | trained on | ranks | threads | factor "
       "|\n|---|---|---|---|---|---|---|\n";
  for (const Packed& p : runs) {
    s << "| " << p.name << " | " << p.experiment << " | " << p.steps << " | " << p.backend << " | " << p.world << " | "
      << p.threads << " | " << p.factor << " |\n";
  }
  for (const Packed& p : runs) {
    if (!p.data_files) continue;
    s << "\n"
      << p.name << " trained on data files (not packed): put them at the paths `runs/" << p.name
      << ".data.tsv` names (relative to the folder you run samebits in); `verify` names any that differ.\n";
  }
  return s.str();
}

}  // namespace

PackResult pack_runs(const PackOptions& options) {
  SB_CHECK(!options.runs.empty(), "pack needs at least one run file (samebits pack RUN.h5 OUT/)");
  SB_CHECK(options.gpu_factor > 0, "--gpu-factor must be positive");
  const fs::path out(options.out);
  std::error_code ec;
  SB_CHECK(!fs::exists(out, ec) || (fs::is_directory(out, ec) && fs::is_empty(out, ec)), "cannot pack into '",
           options.out, "': it exists and is not an empty folder (pack never overwrites)");
  PackResult result;
  std::vector<Packed> packed;
  for (const std::string& run : options.runs) packed.push_back(pack_one(run, out / "runs", options.gpu_factor, result));
  if (!options.claims.empty()) {
    const ClaimsFile source = read_claims(options.claims, fs::path(options.runs.front()).parent_path().string());
    for (const std::string& name : source.run_names()) {
      SB_CHECK(std::any_of(packed.begin(), packed.end(), [&](const Packed& p) { return p.name == name; }),
               "cannot pack the claims file ", options.claims, ": it rests on run ", name, ", which is not packed");
    }
    copy_into(options.claims, out / "CLAIMS.ini");
    result.files.push_back("CLAIMS.ini");
    const ClaimsFile target = read_claims((out / "CLAIMS.ini").string());
    SB_CHECK(fs::equivalent(target.runs_dir, out / "runs", ec), "cannot pack the claims file ", options.claims,
             ": its [claims] runs is not 'runs' (the packed folder keeps the runs in runs/)");
    for (const Claim& c : source.claims) {
      if (c.quantity != "table_cell" || fs::exists(target.report_path(c.report))) continue;
      copy_into(source.report_path(c.report), target.report_path(c.report));
      result.files.push_back(fs::relative(target.report_path(c.report), out).string());
    }
  }
  write_text(out / "EVALUATE.md", evaluate_markdown(packed, options.claims, options.gpu_factor));
  result.files.push_back("EVALUATE.md");
  return result;
}

std::string packed_run_path(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return path;
  const fs::path runs = fs::exists(fs::path(path) / "runs", ec) ? fs::path(path) / "runs" : fs::path(path);
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(runs, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".h5") found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  SB_CHECK(found.size() == 1, path, " is a folder; ",
           found.empty()
               ? "it holds no run file (RUN.h5 or runs/RUN.h5)"
               : "it holds " + std::to_string(found.size()) + " run files: name one (e.g. " + found.front() + ")");
  return found.front();
}

}  // namespace sb::cli
