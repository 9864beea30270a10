// verify_budget.hpp: calibration, the seeded choice of windows and their verification. Expected
// time of a window = setup (a Trainer) + this machine's step 1 × Σ over its steps of max(1, the
// recorded step / the median recorded step): evaluation steps are priced as they ran, relative to
// the run's own steps, so a GPU run or a recording on a busy machine does not skew the plan.
// Windows are planned into 90 % of what the calibration leaves of the budget.
#include "samebits/cli/verify_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "samebits/cli/data_provenance.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/train/run_header.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/build_info.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr double kPlanShare = 0.9;  // of the budget left after calibration: room for the machine's noise

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string window_name(const BudgetWindow& w) {
  return "steps " + std::to_string(w.from + 1) + "-" + std::to_string(w.from + w.steps) +
         (w.from > 0 ? " (from the kept state of step " + std::to_string(w.from) + ")" : " (from the start)");
}

std::string verdict(const BudgetWindow& w) {
  if (w.skipped) return "skipped (budget)";
  if (!w.result) return "not run";
  if (!w.result->data_differences.empty()) return "DATA DIFFERS";
  if (w.result->mismatch) return "MISMATCH at step " + std::to_string(w.result->mismatch->step);
  return "IDENTICAL";
}

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// The window starts: 0 and every kept state before the last recorded step.
std::vector<int64_t> window_starts(const run::RunReader& run) {
  std::vector<int64_t> starts{0};
  for (const run::StoreEntry& e : run.store_entries()) {
    if (e.is_state() && (e.kind & run::kKeptBit) && e.step > 0 && e.step < run.steps_recorded())
      starts.push_back(e.step);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

}  // namespace

double parse_duration(const std::string& text, const std::string& what) {
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    SB_CHECK(j > i && j - i <= 12 && std::count(text.begin() + long(i), text.begin() + long(j), '.') <= 1, what, " '",
             text, "' is not a duration (e.g. 10m, 90s, 1h30m)");
    const double v = std::stod(text.substr(i, j - i));
    double unit = 1;
    if (j < text.size()) {
      const char u = text[j++];
      SB_CHECK(u == 's' || u == 'm' || u == 'h', what, " '", text, "': unit '", std::string(1, u),
               "' is not s, m or h (e.g. 10m, 90s, 1h30m)");
      unit = u == 'h' ? 3600 : u == 'm' ? 60 : 1;
    } else {
      SB_CHECK(!any, what, " '", text, "': every number but a lone one needs a unit (s, m or h)");
    }
    total += v * unit;
    any = true;
    i = j;
  }
  SB_CHECK(any && std::isfinite(total) && total <= 1e7, what, " '", text, "' is not a duration (e.g. 10m, 90s, 1h30m)");
  return total;
}

std::string duration_spec(double seconds) {
  if (seconds < 60) return fixed(seconds, seconds < 10 ? 1 : 0) + "s";
  const int64_t s = int64_t(std::llround(seconds));
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
}

bool BudgetResult::reproduced() const {
  if (!data_differences.empty()) return false;
  const bool any = std::any_of(windows.begin(), windows.end(), [](const BudgetWindow& w) { return !w.skipped; });
  return any && std::all_of(windows.begin(), windows.end(),
                            [](const BudgetWindow& w) { return w.skipped || (w.result && w.result->reproduced()); });
}

namespace {

// A Trainer built here and its first step, against the median recorded step (robust to a busy
// recording): r's step_here, setup, step_recorded and this machine's description.
void calibrate(const Config& config, const std::vector<double>& recorded, BudgetResult& r) {
  const std::vector<float> initial_weights = io::load_initial_weights(config);
  TrainerOptions trainer_options;
  if (!config.train.init.empty()) trainer_options.initial_weights = &initial_weights;
  {
    const double a = now();
    Trainer trainer(config, trainer_options);
    const double b = now();
    trainer.step();
    r.step_here = now() - b;
    r.setup = b - a;
    r.backend_here = trainer.backend().describe();
    r.environment_here = environment_text(trainer.backend());
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  r.host_here = host;
  std::vector<double> sorted = recorded;
  std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
  r.step_recorded = std::max(sorted[sorted.size() / 2], 1e-9);
}

// The candidate windows, the start and each kept state to the next, priced by the calibration.
std::vector<BudgetWindow> price_windows(const run::RunReader& run, const std::vector<double>& recorded,
                                        const BudgetResult& r) {
  const std::vector<int64_t> starts = window_starts(run);
  std::vector<BudgetWindow> candidates;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    BudgetWindow w;
    w.from = starts[k];
    w.steps = (k + 1 < starts.size() ? starts[k + 1] : run.steps_recorded()) - w.from;
    double sum = 0;  // in median recorded steps, never fewer than one each (evaluation steps count more)
    for (int64_t s = w.from; s < w.from + w.steps; ++s)
      sum += std::max(1.0, recorded[std::size_t(s)] / r.step_recorded);
    w.steps_priced = sum;
    w.expected = r.setup + r.step_here * sum;
    candidates.push_back(w);
  }
  return candidates;
}

// The seeded choice: the candidates shuffled, each taken while the plan still fits `available`
// seconds; when none fits whole, the first drawn cut to what fits (one step at least). Ascending.
std::vector<BudgetWindow> choose_windows(std::vector<BudgetWindow> candidates, uint64_t seed, double available,
                                         double setup) {
  uint64_t state = seed;
  for (std::size_t k = candidates.size(); k > 1; --k) std::swap(candidates[k - 1], candidates[splitmix64(state) % k]);
  std::vector<BudgetWindow> chosen;
  double planned = 0;
  for (const BudgetWindow& w : candidates) {
    if (planned + w.expected <= available) {
      chosen.push_back(w);
      planned += w.expected;
    }
  }
  if (chosen.empty()) {
    BudgetWindow w = candidates.front();
    const double per_step = (w.expected - setup) / double(w.steps);
    const int64_t steps = std::clamp<int64_t>(int64_t((available - setup) / std::max(per_step, 1e-9)), 1, w.steps);
    w.steps_priced *= double(steps) / double(w.steps);
    w.steps = steps;
    w.expected = setup + per_step * double(w.steps);
    chosen.push_back(w);
  }
  std::sort(chosen.begin(), chosen.end(), [](const BudgetWindow& a, const BudgetWindow& b) { return a.from < b.from; });
  return chosen;
}

// The plan, printed before anything runs.
void log_plan(const run::RunReader& run, const BudgetResult& r, double so_far, std::ostream& log) {
  int64_t steps = 0;
  double planned = 0;
  for (const BudgetWindow& w : r.windows) steps += w.steps, planned += w.expected;
  const int64_t rows = run.steps_recorded();
  log << "plan: verify " << r.path << " (" << rows << " steps, experiment " << run.info().experiment_id << ") within "
      << duration_spec(r.budget) << "\n"
      << "  calibration: step 1 took " << fixed(r.step_here, 3) << " s here, " << fixed(r.step_recorded, 3)
      << " s the median recorded step (factor " << fixed(r.step_here / r.step_recorded, 2) << "); setup "
      << fixed(r.setup, 2) << " s; " << duration_spec(so_far) << " so far\n"
      << "  seed " << r.seed << ": " << r.windows.size() << " of " << r.candidates << " windows, " << steps << " of "
      << rows << " steps, expected " << duration_spec(planned) << " (repeat this choice with --seed " << r.seed
      << ")\n";
  for (const BudgetWindow& w : r.windows)
    log << "    " << window_name(w) << "  expected " << duration_spec(w.expected) << "\n";
  log.flush();
}

// Verifies the chosen windows. A machine that slows down (shared cores) is caught between
// windows: the step time seen so far prices the next window, which is skipped when it no longer
// fits the budget (counted from t0).
void run_windows(const BudgetOptions& options, double t0, BudgetResult& r, std::ostream& log) {
  double step_seen = r.step_here;
  bool first = true;
  for (BudgetWindow& w : r.windows) {
    if (!first && now() - t0 + r.setup + step_seen * w.steps_priced > options.budget) {
      w.skipped = true;
      log << "window " << window_name(w) << ": skipped (the steps so far took " << fixed(step_seen, 3)
          << " s each: it would end past the budget)\n";
      continue;
    }
    first = false;
    const double a = now();
    VerifyOptions v;
    v.from = w.from;
    v.steps = w.steps;
    v.overrides = options.overrides;
    w.result = verify_run(r.path, v, log);
    w.seconds = now() - a;
    step_seen = std::max(step_seen, (w.seconds - r.setup) / std::max(w.steps_priced, 1.0));
    log << "window " << window_name(w) << ": " << verdict(w) << " (" << duration_spec(w.seconds) << ")\n";
    if (!w.result->reproduced()) log << verify_text(r.path, *w.result);
    log.flush();
  }
}

}  // namespace

BudgetResult verify_within_budget(const std::string& path, const BudgetOptions& options, std::ostream& log) {
  const double t0 = now();
  BudgetResult r;
  r.path = path;
  r.budget = options.budget;
  SB_CHECK(options.budget > 0, "--budget must be more than 0 seconds");
  check_run_overrides(options.overrides);
  const run::RunReader run = run::RunReader::open(path);
  SB_CHECK(run.steps_recorded() > 0, path, " records no steps yet: nothing to verify");
  const Config config = recorded_config(run, options.overrides);
  r.data_differences = data_differences(path, run.info(), config);
  if (!r.data_differences.empty()) {
    r.seconds = now() - t0;
    return r;
  }
  const std::vector<double> recorded = run.series<double>("timing/step_seconds");
  calibrate(config, recorded, r);
  const std::vector<BudgetWindow> candidates = price_windows(run, recorded, r);
  r.candidates = int64_t(candidates.size());
  r.seed = options.seed ? *options.seed : (uint64_t(std::random_device{}()) << 32 | std::random_device{}());
  r.windows = choose_windows(candidates, r.seed, kPlanShare * (options.budget - (now() - t0)), r.setup);
  log_plan(run, r, now() - t0, log);
  run_windows(options, t0, r, log);
  r.seconds = now() - t0;
  return r;
}

std::string budget_verdict_text(const BudgetResult& r) {
  std::ostringstream s;
  if (!r.data_differences.empty()) {
    s << "verdict: DATA DIFFERS: " << r.path << " was trained on other data than the files here; no step was run\n";
    for (const auto& line : r.data_differences) s << "  " << line << "\n";
    return s.str();
  }
  int64_t steps = 0, run = 0;
  for (const BudgetWindow& w : r.windows) {
    s << "  " << window_name(w) << ": " << verdict(w) << "\n";
    if (!w.skipped) steps += w.steps, ++run;
  }
  s << "verdict: " << (r.reproduced() ? "IDENTICAL" : "NOT REPRODUCED") << " (" << run << " of " << r.candidates
    << " windows"
    << (run < int64_t(r.windows.size())
            ? " (" + std::to_string(r.windows.size() - std::size_t(run)) + " planned, skipped for the budget)"
            : std::string())
    << ", " << steps << " steps checked bit for bit, " << duration_spec(r.seconds) << " of " << duration_spec(r.budget)
    << ", seed " << r.seed << ")\n";
  return s.str();
}

std::string budget_report_markdown(const BudgetResult& r) {
  const run::RunReader run = run::RunReader::open(r.path);
  run::RunInfo i = run.info();  // text from the file, printed escaped
  for (std::string* t : {&i.experiment_id, &i.execution.backend, &i.execution.communicator, &i.samebits_version,
                         &i.samebits_commit, &i.compiler, &i.build_type, &i.simd, &i.host}) {
    *t = escape_untrusted(*t);
  }
  for (std::string* t : {&i.execution.environment, &i.data_files}) {  // line by line
    std::istringstream in(*t);
    std::string line, text;
    while (std::getline(in, line)) {
      std::replace(line.begin(), line.end(), '\t', ' ');  // the manifest's columns
      text += escape_untrusted(line) + "\n";
    }
    *t = text;
  }
  std::ostringstream s;
  const auto block = [](const std::string& text) {
    return "```\n" + text + (text.empty() || text.back() != '\n' ? "\n" : "") + "```\n";
  };
  s << "# Verification of " << r.path << "\n\n"
    << "**Verdict: " << (r.reproduced() ? "IDENTICAL" : "NOT REPRODUCED") << "** (" << duration_spec(r.seconds)
    << " of a " << duration_spec(r.budget) << " budget, seed " << r.seed << ")\n\n"
    << "Repeat: `samebits verify " << r.path << " --budget " << duration_spec(r.budget) << " --seed " << r.seed
    << "`\n\n"
    << "## The run\n\n"
    << "| | |\n|---|---|\n"
    << "| experiment | " << i.experiment_id << " |\n"
    << "| status | " << to_string(i.status) << ", " << run.steps_recorded() << " of " << i.steps << " steps |\n"
    << "| trained on | " << i.execution.backend << " |\n"
    << "| GPU or CPU | " << (i.execution.backend.rfind("cuda", 0) == 0 ? "GPU" : "CPU") << " |\n"
    << "| world size | " << i.execution.world_size << " (" << i.execution.communicator << "), " << i.execution.threads
    << " threads, micro-leaves " << i.execution.micro_leaves << " |\n"
    << "| build | samebits " << i.samebits_version << " (" << i.samebits_commit << "), " << i.compiler << " "
    << i.build_type << ", simd " << i.simd << " |\n"
    << "| host | " << i.host << " |\n\n"
    << "Environment when trained:\n\n"
    << block(i.execution.environment.empty() ? "not recorded" : i.execution.environment)
    << "\nData (name, size, digest):\n\n"
    << block(i.data_files.empty() ? "not recorded" : i.data_files) << "\n"
    << "## This machine\n\n"
    << "| | |\n|---|---|\n"
    << "| host | " << r.host_here << " |\n"
    << "| backend | " << r.backend_here << " |\n"
    << "| build | samebits " << build::kVersion << " (" << build::kGitCommit << "), " << build::kCompiler << " "
    << build::kBuildType << " |\n"
    << "| calibration | step 1: " << fixed(r.step_here, 3) << " s here, " << fixed(r.step_recorded, 3)
    << " s the median recorded step; setup " << fixed(r.setup, 2) << " s |\n\n"
    << "Environment here:\n\n"
    << block(r.environment_here) << "\n"
    << "## Windows\n\n";
  if (!r.data_differences.empty()) {
    s << "None ran: the data differ from the recorded data:\n\n";
    std::string lines;
    for (const auto& l : r.data_differences) lines += l + "\n";
    s << block(lines);
    return s.str();
  }
  s << r.windows.size() << " of " << r.candidates << " windows (the start and the kept states), chosen with seed "
    << r.seed << ".\n\n| window | from | steps | expected | took | verdict |\n|---|---|---|---|---|---|\n";
  for (const BudgetWindow& w : r.windows) {
    s << "| " << w.from + 1 << "-" << w.from + w.steps << " | "
      << (w.from > 0 ? "kept state of step " + std::to_string(w.from) : "start") << " | " << w.steps << " | "
      << duration_spec(w.expected) << " | " << duration_spec(w.seconds) << " | " << verdict(w) << " |\n";
  }
  for (const BudgetWindow& w : r.windows) {
    if (w.result && !w.result->reproduced()) s << "\n" << block(verify_text(r.path, *w.result));
  }
  s << "\nTime used: " << duration_spec(r.seconds) << " (calibration included) of " << duration_spec(r.budget) << ".\n";
  return s.str();
}

}  // namespace sb::cli
