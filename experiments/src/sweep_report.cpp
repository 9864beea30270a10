// A sweep's results (sweep.hpp): every cell's run compared with its reference run through
// diff_runs (bitwise identity, first divergent step, loss gap, relative L2 distance wherever both
// hold the parameters), the table, OUT/summary.h5 and OUT/report.md. Distances are fp64 over the
// stored fp32 bits; "identical" is a bitwise claim (diff.hpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include "samebits/cli/diff.hpp"
#include "samebits/cli/divergence.hpp"
#include "samebits/cli/json.hpp"
#include "samebits/cli/sweep.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The run files of the sweep, opened once each (nullptr: missing or unreadable, with why).
struct Runs {
  std::map<std::string, std::shared_ptr<run::RunReader>> readers;
  std::map<std::string, std::string> errors;
  const run::RunReader* get(const SweepCell& cell) {
    if (!readers.count(cell.name) && !errors.count(cell.name)) {
      try {
        readers[cell.name] = std::make_shared<run::RunReader>(run::RunReader::open(cell.run_path));
      } catch (const Error& e) {
        errors[cell.name] = fs::exists(cell.run_path) ? escape_untrusted(e.what()) : "no run file";
      }
    }
    return readers.count(cell.name) ? readers[cell.name].get() : nullptr;
  }
};

// The distances of `d` by step (a snapshot and the final state at the same step are one point).
void take_distances(const RunDiff& d, CellResult& r) {
  for (const StateDistance& s : d.states) {
    if (!r.distance_steps.empty() && r.distance_steps.back() == s.step) {
      r.rel_l2.back() = s.rel_l2;
      continue;
    }
    r.distance_steps.push_back(s.step);
    r.rel_l2.push_back(s.rel_l2);
  }
}

}  // namespace

std::vector<CellResult> compare_cells(const SweepSpec& spec) {
  Runs runs;
  std::vector<CellResult> results;
  for (const SweepCell& cell : spec.cells) {
    CellResult r;
    r.name = cell.name;
    r.description = cell.describe();
    r.experiment_id = cell.experiment_id;
    r.group = cell.group;
    r.reference = cell.compare_to;
    r.final_rel_l2 = kNaN;
    r.growth_rate = kNaN;
    r.disagreement = kNaN;
    r.logit_correlation = kNaN;
    r.route_disagreement = kNaN;
    r.moe = cell.config.model.moe_experts > 0;
    r.final_loss = std::numeric_limits<float>::quiet_NaN();
    const run::RunReader* run = runs.get(cell);
    if (run == nullptr) {
      r.status = runs.errors[cell.name];
      results.push_back(std::move(r));
      continue;
    }
    r.available = true;
    r.status = std::string(run::to_string(run->info().status));
    r.steps = run->steps_recorded();
    r.loss = run->series<float>("series/loss");
    if (!r.loss.empty()) r.final_loss = r.loss.back();
    r.grad_sq_est = run->series<float>("series/grad_sq_est");
    r.trace_est = run->series<float>("series/trace_est");
    const std::vector<double> seconds = run->series<double>("timing/step_seconds");
    r.wall_seconds = std::accumulate(seconds.begin(), seconds.end(), 0.0);
    const SweepCell& ref_cell = *std::find_if(spec.cells.begin(), spec.cells.end(),
                                              [&](const SweepCell& c) { return c.name == cell.compare_to; });
    const run::RunReader* ref = runs.get(ref_cell);
    if (ref == nullptr) {
      r.available = false;
      r.status = "reference " + ref_cell.name + ": " + runs.errors[ref_cell.name];
    } else if (ref_cell.name == cell.name) {
      r.identical = true;
      r.loss_gap.assign(r.loss.size(), 0.0);
      for (int64_t s : run->snapshot_steps()) r.distance_steps.push_back(s);
      if (run->has_final_state() && (r.distance_steps.empty() || r.distance_steps.back() != r.steps)) {
        r.distance_steps.push_back(r.steps);
      }
      r.rel_l2.assign(r.distance_steps.size(), 0.0);
      if (!r.rel_l2.empty()) {
        r.final_rel_l2 = 0.0;
        r.final_distance_step = r.distance_steps.back();
      }
      r.disagreement = 0.0;
      r.logit_correlation = 1.0;
      r.route_disagreement = 0.0;
    } else {
      DiffOptions options;
      options.agreement = false;
      const RunDiff d = diff_runs(*ref, *run, options);
      r.identical = d.identical();
      r.first_divergent_step = d.first_divergent_step;
      for (std::size_t s = 0; s < d.loss_b.size(); ++s) {
        r.loss_gap.push_back(double(d.loss_b[s]) - double(d.loss_a[s]));
        r.max_loss_gap = std::max(r.max_loss_gap, std::fabs(r.loss_gap.back()));
      }
      take_distances(d, r);
      r.growth_rate = d.growth.rate;
      r.jump_step = d.growth.jump_step;
      if (!r.rel_l2.empty()) {
        r.final_rel_l2 = r.rel_l2.back();
        r.final_distance_step = r.distance_steps.back();
      }
      if (r.identical) {
        r.disagreement = 0.0;
        r.logit_correlation = 1.0;
        r.route_disagreement = 0.0;
      } else if (d.same_layout && !d.states.empty()) {
        const StateDistance& last = d.states.back();
        const auto weights = [&](const run::RunReader& x) {
          return last.source == "snapshot" ? x.read_snapshot(last.step) : x.read_final_state().weights;
        };
        AgreementProbe probe(ref_cell.config);
        const Agreement a = probe.compare(weights(*ref), weights(*run), last.step, last.source);
        r.disagreement = a.disagreement;
        r.logit_correlation = a.logit_correlation;
        r.route_disagreement = a.route_disagreement;
      }
    }
    results.push_back(std::move(r));
  }
  return results;
}

Pairwise compare_pairs(const SweepSpec& spec) {
  const std::size_t n = spec.cells.size();
  Pairwise p;
  p.first_divergent_step.assign(n * n, -1);
  p.final_rel_l2.assign(n * n, kNaN);
  Runs runs;
  DiffOptions options;
  options.agreement = false;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i; j < n; ++j) {
      if (spec.cells[i].group != spec.cells[j].group) continue;
      const run::RunReader* a = runs.get(spec.cells[i]);
      const run::RunReader* b = runs.get(spec.cells[j]);
      if (a == nullptr || b == nullptr) continue;
      int64_t first = 0;
      double rel = 0;
      if (i != j) {
        const RunDiff d = diff_runs(*a, *b, options);
        first = d.identical() ? 0 : std::max<int64_t>(d.first_divergent_step, 1);
        rel = d.states.empty() ? kNaN : d.states.back().rel_l2;
      }
      p.first_divergent_step[i * n + j] = p.first_divergent_step[j * n + i] = first;
      p.final_rel_l2[i * n + j] = p.final_rel_l2[j * n + i] = rel;
    }
  }
  return p;
}

std::string pairwise_table(const SweepSpec& spec, const Pairwise& pairs) {
  const std::size_t n = spec.cells.size();
  std::ostringstream t;
  t << "| | cell |";
  for (std::size_t j = 0; j < n; ++j) t << " " << j + 1 << " |";
  t << "\n|---|---|";
  for (std::size_t j = 0; j < n; ++j) t << "---|";
  t << "\n";
  for (std::size_t i = 0; i < n; ++i) {
    t << "| " << i + 1 << " | " << spec.cells[i].name << " |";
    for (std::size_t j = 0; j < n; ++j) {
      const int64_t f = pairs.first_divergent_step[i * n + j];
      t << " " << (f < 0 ? std::string() : f == 0 ? std::string("=") : std::to_string(f)) << " |";
    }
    t << "\n";
  }
  return t.str();
}

std::string results_table(const std::vector<CellResult>& results) {
  // Sweeps of Mixture-of-Experts models add the probe's route disagreement after the argmax one.
  const bool moe = std::any_of(results.begin(), results.end(), [](const CellResult& r) { return r.moe; });
  const auto percent = [](double v) {
    return std::isnan(v) ? std::string("—") : v == 0 ? std::string("0") : fmt("%.2g", 100 * v) + " %";
  };
  std::ostringstream t;
  t << "| cell | configuration | reference | identical | first divergent step | final rel. L2 (step) | growth /step | "
       "disagreement | "
    << (moe ? "routes differ | " : "") << "final loss | max loss gap | train s |\n|---|---|---|---|---|---|---|---|"
    << (moe ? "---|" : "") << "---|---|---|\n";
  for (const CellResult& r : results) {
    t << "| " << r.name << " | " << r.description << " | ";
    if (!r.available) {
      t << r.reference << " | — | — | — | — | — | " << (moe ? "— | " : "") << "— | — | " << r.status << " |\n";
      continue;
    }
    const bool self = r.reference == r.name;
    t << (self ? "—" : r.reference) << " | "
      << (self          ? "reference"
          : r.identical ? "**yes**"
                        : "no")
      << " | " << (r.first_divergent_step > 0 ? std::to_string(r.first_divergent_step) : "—") << " | ";
    if (std::isnan(r.final_rel_l2)) {
      t << "— | ";
    } else {
      t << (r.final_rel_l2 == 0 ? std::string("0") : fmt("%.3g", r.final_rel_l2)) << " (" << r.final_distance_step
        << ") | ";
    }
    t << (std::isnan(r.growth_rate) ? std::string("—") : fmt("%.3g", r.growth_rate)) << " | " << percent(r.disagreement)
      << " | ";
    if (moe) t << (r.moe ? percent(r.route_disagreement) : std::string("—")) << " | ";
    t << fmt("%.6f", r.final_loss) << (r.status == "finished" ? "" : " (" + r.status + ")") << " | "
      << (r.max_loss_gap == 0 ? std::string("0") : fmt("%.2g", r.max_loss_gap)) << " | " << fmt("%.1f", r.wall_seconds)
      << " |\n";
  }
  return t.str();
}

void write_summary(const SweepSpec& spec, const std::vector<CellResult>& results, const Pairwise* pairs,
                   const std::string& path) {
  std::string names;
  for (const CellResult& r : results) names += (names.empty() ? "" : "\n") + r.name;
  h5::write_h5_atomically(path, [&](h5::File& f) {
    f.set_attr("format", "samebits-sweep");
    f.set_attr("title", spec.title);
    f.set_attr("question", spec.question);
    f.set_attr("expect", spec.expect);
    f.set_attr("sweep_file", spec.file);
    f.set_attr("sweep_text", spec.text);
    f.set_attr("base", spec.base);
    f.set_attr("cells", names);
    if (pairs != nullptr) {
      const uint64_t n = results.size();
      f.create_group("pairwise");
      f.write_dataset<int64_t>("pairwise/first_divergent_step", pairs->first_divergent_step, {n, n});
      f.write_dataset<double>("pairwise/final_rel_l2", pairs->final_rel_l2, {n, n});
    }
    h5::Group cells = f.create_group("cells");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const CellResult& r = results[i];
      const SweepCell& cell = spec.cells[i];
      h5::Group g = cells.create_group(r.name);
      g.set_attr("order", int64_t(i));
      g.set_attr("description", r.description);
      std::string overrides;
      for (const std::string& o : cell.overrides) overrides += (overrides.empty() ? "" : " ") + o;
      g.set_attr("overrides", overrides);
      g.set_attr("ranks", int64_t(cell.ranks));
      g.set_attr("micro_leaves", int64_t(cell.micro_leaves));
      g.set_attr("run_file", cell.run_path);
      g.set_attr("experiment_id", r.experiment_id);
      g.set_attr("group", r.group);
      g.set_attr("reference", r.reference);
      g.set_attr("status", r.status);
      g.set_attr("available", int64_t(r.available));
      g.set_attr("identical", int64_t(r.identical));
      g.set_attr("steps", r.steps);
      g.set_attr("first_divergent_step", r.first_divergent_step);
      g.set_attr("final_rel_l2", r.final_rel_l2);
      g.set_attr("final_distance_step", r.final_distance_step);
      g.set_attr("growth_rate", r.growth_rate);
      g.set_attr("jump_step", r.jump_step);
      g.set_attr("disagreement", r.disagreement);
      g.set_attr("logit_correlation", r.logit_correlation);
      g.set_attr("route_disagreement", r.route_disagreement);
      g.set_attr("max_loss_gap", r.max_loss_gap);
      g.set_attr("final_loss", double(r.final_loss));
      g.set_attr("wall_seconds", r.wall_seconds);
      if (!r.loss.empty()) g.write_dataset<float>("loss", r.loss);
      if (!r.grad_sq_est.empty()) g.write_dataset<float>("grad_sq_est", r.grad_sq_est);
      if (!r.trace_est.empty()) g.write_dataset<float>("trace_est", r.trace_est);
      if (!r.loss_gap.empty()) g.write_dataset<double>("loss_gap", r.loss_gap);
      if (!r.distance_steps.empty()) {
        g.write_dataset<int64_t>("distance_steps", r.distance_steps);
        g.write_dataset<double>("rel_l2", r.rel_l2);
      }
    }
  });
}

std::string report_markdown(const SweepSpec& spec, const std::vector<CellResult>& results, const Pairwise* pairs,
                            const std::vector<std::string>& pngs, const std::string& plot_note) {
  std::ostringstream md;
  md << "# " << spec.title << "\n\n";
  if (!spec.question.empty()) md << "**Question.** " << spec.question << "\n\n";
  if (!spec.expect.empty()) md << "**What to expect.** " << spec.expect << "\n\n";
  md << "Sweep file `" << spec.file << "` over the base experiment `" << (spec.base.empty() ? "(defaults)" : spec.base)
     << "`: " << results.size() << " cells, run files in `" << (fs::path(spec.out) / "runs").string()
     << "/`, per-cell logs in `" << (fs::path(spec.out) / "logs").string() << "/`, the numbers below in `"
     << (fs::path(spec.out) / "summary.h5").string() << "`. Running `samebits sweep " << spec.file
     << "` again skips finished runs and resumes interrupted ones.\n\n";
  md << "## Results\n\n" << results_table(results) << "\n";
  md << "Each cell is compared with the reference run of its experiment group (cells that differ only in "
        "execution, numerics switches, perturbation or seeds): *identical* means every recorded bit — losses, "
        "statistics, per-tensor parameter and gradient fingerprints of every step, and the parameters wherever "
        "both runs stored them — is equal. *First divergent step*: the first step whose recorded bits differ. "
        "*Final rel. L2*: ‖W − W_ref‖₂ / ‖W_ref‖₂ over all parameters at the last step both runs hold them. "
        "*Growth /step*: the least-squares slope of ln(rel. L2) against the step over the distance points from "
        "the first divergent step on (× 10 every 2.3 / rate steps; docs/STUDIES.md §5). *Disagreement*: the "
        "fraction of token positions of a fixed validation batch whose most likely next token differs "
        "between the two models at that last step. "
     << (std::any_of(results.begin(), results.end(), [](const CellResult& r) { return r.moe; })
             ? "*Routes differ*: the fraction of that batch's token routes (positions × MoE blocks) whose top-k "
               "expert set differs there. "
             : "")
     << "*Max loss gap*: the largest |loss − reference loss| over the steps. "
        "*Train s*: the sum of the run's step times (the only column that is not reproducible).\n\n";
  if (pairs != nullptr) {
    md << "## Every pair\n\nThe first divergent step of every pair of cells of one group (`=`: bitwise identical; "
          "blank: different groups or a missing run).\n\n"
       << pairwise_table(spec, *pairs) << "\n";
  }
  md << "## Plots\n\n";
  const std::map<std::string, std::string> captions{
      {"loss.png", "training loss per step"},
      {"loss_gap.png", "loss minus the reference's loss, per step"},
      {"rel_l2.png", "relative L2 distance of the parameters to the reference (log axis; 0 drawn at the floor)"},
      {"first_divergence.png", "first divergent step per cell (no bar: identical to its reference)"},
      {"noise_scale.png", "gradient noise scale B_simple = EMA(tr Σ) / EMA(|G|²), β = 0.9 (docs/STUDIES.md §1)"}};
  for (const std::string& png : pngs) {
    const auto c = captions.find(png);
    md << "![" << (c == captions.end() ? png : c->second) << "](plots/" << png << ")\n\n";
  }
  if (!plot_note.empty()) md << plot_note << "\n\n";
  return md.str();
}

}  // namespace sb::cli
