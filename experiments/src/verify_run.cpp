// verify.hpp: re-run a recorded experiment and compare every step's row of every experiment
// column with the file, bit for bit (the row is produced by the same SeriesColumn::append the
// writer used, so the comparison is of the exact bytes the file holds).
#include "samebits/cli/verify.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "samebits/cli/data_provenance.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/build_info.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::cli {
namespace {

struct Column {
  const run::SeriesColumn* column;
  std::vector<std::byte> recorded;  // (steps, width) of the column's dtype
  std::size_t row_bytes;
};

std::vector<float> host_weights(Trainer& trainer) {
  std::vector<float> w(trainer.model().flat_size());  // (flat_size)
  trainer.backend().copy_to_host(w.data(), trainer.model().weights().data(), w.size() * sizeof(float));
  return w;
}

// The parameters the file holds for `step`, and where they come from.
std::optional<std::pair<std::vector<float>, std::string>> stored_params(const run::RunReader& run, int64_t step) {
  for (const run::StoreEntry& e : run.store_entries()) {
    if (e.step != step) continue;
    const std::string what = e.is_state() ? "the state of step " : "the snapshot of step ";
    return std::pair{e.is_state() ? run.read_state(step).weights : run.read_snapshot(step),
                     what + std::to_string(step) + " (" + run::store_file(run.path(), e) + ")"};
  }
  return std::nullopt;
}

// "10, 20, 30" or "none".
std::string steps_text(const std::vector<int64_t>& steps) {
  std::string s;
  for (int64_t step : steps) s += (s.empty() ? "" : ", ") + std::to_string(step);
  return s.empty() ? "none" : s;
}

// Fills mismatch.element (or a note) by comparing the re-run's parameters with the file's.
void locate_element(const run::RunReader& run, int64_t step, const std::vector<float>& computed, VerifyMismatch& m) {
  const auto stored = stored_params(run, step);
  if (!stored) {
    m.note = "the file holds no parameters of step " + std::to_string(step) +
             ": element values need a snapshot there (train with --train.snapshot_steps " + std::to_string(step) + ")";
    return;
  }
  const std::vector<float>& recorded = stored->first;
  for (const run::TensorInfo& t : run.tensors()) {
    for (uint64_t i = 0; i < t.numel; ++i) {
      uint32_t r, c;
      std::memcpy(&r, &recorded[t.offset + i], 4);
      std::memcpy(&c, &computed[t.offset + i], 4);
      if (r == c) continue;
      ElementMismatch e;
      e.tensor = t.name;
      e.index = t.shape.size() == 2 ? std::vector<int64_t>{int64_t(i) / t.shape[1], int64_t(i) % t.shape[1]}
                                    : std::vector<int64_t>{int64_t(i)};
      e.recorded = r;
      e.computed = c;
      e.ulp = ulp_distance(recorded[t.offset + i], computed[t.offset + i]);
      m.element = e;
      m.note = "element values from " + stored->second;
      return;
    }
  }
  m.note =
      "the file's parameters of step " + std::to_string(step) + " (" + stored->second +
      ") equal the re-run's bit for bit" +
      (m.params.empty() ? std::string() : ": the recorded fingerprints are wrong (the file was edited or damaged)");
}

void fingerprint_mismatches(const run::RunReader& run, const Column& col, std::size_t step_row,
                            const std::vector<std::byte>& computed, std::vector<TensorFingerprint>& out) {
  for (std::size_t t = 0; t < run.tensors().size(); ++t) {
    uint64_t r, c;
    std::memcpy(&r, col.recorded.data() + step_row * col.row_bytes + t * 8, 8);
    std::memcpy(&c, computed.data() + t * 8, 8);
    if (r != c) out.push_back({run.tensors()[t].name, r, c});
  }
}

std::string float_text(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  char text[64];
  std::snprintf(text, sizeof text, "0x%08x (%.9g)", bits, double(f));
  return text;
}

}  // namespace

void check_run_overrides(const std::vector<std::string>& overrides) {
  for (const std::string& token : overrides) {
    SB_CHECK(token.rfind("--", 0) != 0 || token.rfind("--run.", 0) == 0, "verify re-runs the recorded experiment: ",
             "only run.* options (how to run: threads, backend) may be given, not '", token, "'");
  }
}

VerifyResult verify_run(const std::string& path, const VerifyOptions& options, std::ostream& log) {
  check_run_overrides(options.overrides);
  const run::RunReader run = run::RunReader::open(path);
  Config config = recorded_config(run, options.overrides);
  // One process here: the layout is execution, and every layout records the same bits (a
  // tp_mode other than duplicated has numerics that depend on its tp, so such a run keeps its group
  // size and fails here). Pipeline stages never change a bit.
  if (config.optim.tp_mode == TpMode::duplicated) config.parallel.tp = 1;
  config.parallel.pp = 1;
  const int64_t rows = run.steps_recorded();
  SB_CHECK(rows > 0, path, " records no steps yet (status ", to_string(run.info().status), "): nothing to verify");
  const int64_t from = options.from;
  SB_CHECK(from >= 0 && from < rows, "--from ", from, ": ", path, " records ", rows,
           " steps (a window starts before the last one)");
  SB_CHECK(options.steps >= 0 && options.steps <= rows - from, "--steps ", options.steps, ": ", path, " records ", rows,
           " steps",
           from > 0 ? ", " + std::to_string(rows - from) + " of them after step " + std::to_string(from) : "");
  const int64_t steps = options.steps > 0 ? options.steps : rows - from;
  if (from > 0) {
    const auto states = run.state_steps();
    SB_CHECK(std::binary_search(states.begin(), states.end(), from), "--from ", from, ": ", path,
             " keeps no state of step ", from, "; its store keeps states of steps ", steps_text(states),
             " (train with --train.keep_states N to keep one every N steps)");
  }
  VerifyResult result;
  const run::RunInfo& info = run.info();
  if (info.samebits_version != build::kVersion || info.samebits_commit != build::kGitCommit) {
    result.warnings.push_back("the file was written by samebits " + info.samebits_version + " (commit " +
                              info.samebits_commit + "), this is " + build::kVersion + " (commit " + build::kGitCommit +
                              "); the contract holds for one samebits version");
  }

  result.data_differences = data_differences(path, info, config);
  if (!result.data_differences.empty()) return result;
  const std::vector<float> initial_weights = io::load_initial_weights(config);
  TrainerOptions trainer_options;
  if (!config.train.init.empty()) trainer_options.initial_weights = &initial_weights;
  Trainer trainer(config, trainer_options);
  if (from > 0) trainer.import_state(run.read_state(from));
  result.from = from;
  const std::size_t tensors = run.tensors().size();
  const uint64_t heads = config.optim.qk_clip > 0.0 ? uint64_t(config.model.n_layer) * config.model.n_head : 0;
  SB_CHECK(run.shape().heads == heads, path, ": records QK-clip maxima of ", run.shape().heads,
           " heads per step, but its config (optim.qk_clip = ", config.optim.qk_clip, ") has ", heads);
  std::vector<Column> columns;
  for (const run::SeriesColumn& c : run::series_columns()) {
    if (!c.experiment || !run::column_recorded(c, run.shape())) continue;
    columns.push_back({&c, run.series_bytes(c), run::column_values(c, run.shape()) * dtype_bytes(c.dtype)});
  }
  log << "verifying " << steps << " of " << rows << " recorded steps of experiment " << info.experiment_id << " ("
      << path << ")" << (from > 0 ? ", from the state of step " + std::to_string(from) : std::string()) << ", on "
      << trainer.backend().describe() << "\n";

  const auto snapshots = run.snapshot_steps();
  if (from == 0 && !snapshots.empty() && snapshots.front() == 0) {
    VerifyMismatch m;
    locate_element(run, 0, host_weights(trainer), m);
    if (m.element) {
      m.columns.push_back("snapshots/" + run::step_name(0));
      result.mismatch = m;
      return result;
    }
  }
  const bool bar = progress_bar_wanted(config.run.progress);
  ProgressDisplay progress(bar ? std::cerr : log, bar, config.run.log_every, from, from + steps, "verify");
  std::vector<std::byte> row;
  for (int64_t s = from + 1; s <= from + steps; ++s) {
    const StepResult r = trainer.step();
    VerifyMismatch m;
    m.step = s;
    for (const Column& col : columns) {
      row.clear();
      col.column->append(r, tensors, row);
      const std::size_t at = std::size_t(s - 1) * col.row_bytes;
      if (row.size() == col.row_bytes && std::memcmp(row.data(), col.recorded.data() + at, col.row_bytes) == 0) {
        continue;
      }
      m.columns.emplace_back(col.column->path);
      if (col.column->path == "series/param_fingerprint")
        fingerprint_mismatches(run, col, size_t(s - 1), row, m.params);
      if (col.column->path == "series/grad_fingerprint") fingerprint_mismatches(run, col, size_t(s - 1), row, m.grads);
    }
    if (!m.columns.empty()) {
      progress.finish();
      locate_element(run, s, host_weights(trainer), m);
      result.steps_checked = s - 1 - from;
      result.mismatch = m;
      return result;
    }
    progress.update(s, r.stats.tokens, r.seconds, r.stats.loss, r.stats.val_loss);
  }
  progress.finish();
  result.steps_checked = steps;
  return result;
}

std::string verify_text(const std::string& path, const VerifyResult& r) {
  std::ostringstream s;
  for (const auto& w : r.warnings) s << "warning: " << w << "\n";
  if (!r.data_differences.empty()) {
    s << "DATA DIFFERS: " << path << " was trained on other data than the files here; no step was run\n";
    for (const auto& line : r.data_differences) s << "  " << line << "\n";
    return s.str();
  }
  if (!r.mismatch) {
    s << "verified " << path << ": " << r.steps_checked << " steps"
      << (r.from > 0 ? " after the state of step " + std::to_string(r.from) : std::string())
      << " match bit for bit (parameter and gradient fingerprints of every tensor, loss, validation loss, "
         "statistics)\n";
    return s.str();
  }
  const VerifyMismatch& m = *r.mismatch;
  s << "MISMATCH at step " << m.step << " of " << path << " (" << r.steps_checked << " steps matched before it)\n";
  std::string columns;
  for (const auto& c : m.columns) columns += (columns.empty() ? "" : ", ") + c;
  s << "  differs     " << columns << "\n";
  for (const auto& [label, list] : {std::pair{"parameters", &m.params}, std::pair{"gradients ", &m.grads}}) {
    for (std::size_t i = 0; i < list->size() && i < 8; ++i) {
      const TensorFingerprint& f = (*list)[i];
      s << "  " << label << "  " << f.tensor << ": recorded fingerprint " << det::fingerprint_hex(f.recorded)
        << ", computed " << det::fingerprint_hex(f.computed) << "\n";
    }
    if (list->size() > 8) s << "  " << label << "  + " << list->size() - 8 << " more tensors\n";
  }
  if (m.element) {
    const ElementMismatch& e = *m.element;
    std::string index;
    for (std::size_t i = 0; i < e.index.size(); ++i) index += (i ? ", " : "") + std::to_string(e.index[i]);
    s << "  element     " << e.tensor << "[" << index << "]: recorded " << float_text(e.recorded) << ", computed "
      << float_text(e.computed) << ", " << (e.ulp == kUlpNaN ? std::string("NaN") : std::to_string(e.ulp))
      << " ULP apart\n";
  }
  if (!m.note.empty()) s << "  note        " << m.note << "\n";
  return s.str();
}

}  // namespace sb::cli
