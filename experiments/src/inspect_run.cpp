// inspect.hpp: the recorded configuration of a run file and the `samebits inspect` text (of a
// samebits run, or of a PyTorch program samebits.torch.Recorder recorded). Nothing
// here trusts the file beyond what RunReader checked: the config text is parsed like any INI file,
// checkpoint files are read (and so checked) before they are called good, and every text taken
// from a file is printed escaped (untrusted_text.hpp).
#include "samebits/cli/inspect.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/data/data_manifest.hpp"
#include "samebits/det/fingerprint.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "samebits/cli/json.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/core/train/perturbation.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

std::string experiment_summary(const Config& c) {
  std::ostringstream s;
  s << config_name(c.optim.name) << ", " << config_name(c.train.precision) << ", "
    << (is_deterministic(c.numerics) ? "deterministic" : "vendor numerics") << "; " << c.model.n_layer << " layers x "
    << c.model.n_embd << ", " << c.model.n_head << " heads, vocab " << c.model.vocab << ", seq " << c.model.seq_len
    << "; " << config_name(c.data.source) << " data, " << c.data.leaves << " leaves x " << c.data.leaf_size
    << " sequences";
  if (c.data.order_seed != 0) s << " (order seed " << c.data.order_seed << ")";
  return s.str();
}

// A PyTorch run's experiment text (python/samebits/torch/execution.py, experiment_text): the user's
// [experiment] fields, the [torch] model and optimizer classes, one [tensors] line per parameter.
struct ProgramExperiment {
  std::string declared, model, optimizer;
  int64_t tensors = 0;
};

ProgramExperiment program_experiment(const std::string& text) {
  ProgramExperiment e;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.size() > 1 && line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = escape_untrusted(line.substr(eq + 3));
    if (section == "experiment") e.declared += (e.declared.empty() ? "" : "; ") + escape_untrusted(key) + " = " + value;
    if (section == "torch" && key == "model") e.model = value;
    if (section == "torch" && key == "optimizer") e.optimizer = value;
    if (section == "tensors") ++e.tensors;
  }
  return e;
}

// The experiment lines of a recorded PyTorch program (no samebits config: nothing to parse).
std::string program_summary(const run::RunReader& run) {
  const std::string& text = run.info().experiment_text;
  const ProgramExperiment e = program_experiment(text);
  std::ostringstream s;
  s << "  (PyTorch program recorded by samebits.torch.Recorder: model " << e.model << ", optimizer " << e.optimizer
    << ", " << e.tensors << " tensors)\n";
  if (det::fingerprint_hex(det::fingerprint(text.data(), text.size())) != run.info().experiment_id)
    s << "             its experiment text does not hash to this id (the file was edited)\n";
  s << "declared     " << (e.declared.empty() ? "nothing (Recorder(..., experiment=None))" : e.declared) << "\n";
  return s.str();
}

std::string indent_lines(const std::string& text, const std::string& pad) {
  std::istringstream in(text);
  std::string line, out;
  bool first = true;
  while (std::getline(in, line)) {
    out += (first ? "" : "\n" + pad) + escape_untrusted(line);
    first = false;
  }
  return out;
}

}  // namespace

Config config_from_text(const std::string& ini_text, const std::vector<std::string>& cli_overrides) {
  return parse_config_text(ini_text, "the recorded config", cli_overrides);
}

Config recorded_config(const run::RunReader& run, const std::vector<std::string>& cli_overrides) {
  Config config;
  try {
    config = config_from_text(run.info().config_text, cli_overrides);
  } catch (const Error& e) {
    SB_FAIL(run.path(), ": its config does not parse with this samebits: ", e.what());
  }
  const std::string id = experiment_id(config);
  SB_CHECK(id == run.info().experiment_id, run.path(), ": its config is experiment ", id,
           " but the file records experiment ", run.info().experiment_id,
           " (the file was edited, or written by another samebits version: ", run.info().samebits_version, ")");
  SB_CHECK(run::tensor_infos(config.model) == run.tensors(), run.path(),
           ": its tensor table is not the layout of its config's model");
  SB_CHECK(config.train.steps == run.info().steps, run.path(), ": attribute steps = ", run.info().steps,
           " but its config says train.steps = ", config.train.steps);
  return config;
}

bool recorded_program(const run::RunReader& run) { return run.info().execution.backend.rfind("torch ", 0) == 0; }

std::string describe_run(const run::RunReader& run) {
  run::RunInfo i = run.info();  // its texts as printed: escaped
  for (std::string* text : {&i.samebits_version, &i.samebits_commit, &i.experiment_id, &i.error, &i.execution.backend,
                            &i.execution.communicator, &i.compiler, &i.build_type, &i.fp_flags, &i.simd,
                            &i.fp_environment, &i.host, &i.time_started, &i.time_updated}) {
    *text = escape_untrusted(*text);
  }
  std::ostringstream s;
  s << "run          " << run.path() << "  (format " << i.format_version << ", samebits " << i.samebits_version
    << ", commit " << i.samebits_commit << ")\n";
  s << "experiment   " << i.experiment_id;
  const bool program = recorded_program(run);
  if (program) {
    s << program_summary(run);
  } else {
    try {
      const Config config = recorded_config(run);
      s << "  (" << experiment_summary(config) << ")\n";
      if (config.perturb.enabled()) s << "perturbation " << perturbation_text(config.perturb) << "\n";
      if (!config.train.init.empty()) {
        s << "init         weights of " << escape_untrusted(config.train.init) << " (XXH3 " << config.train.init_digest
          << ")\n";
      }
    } catch (const Error& e) {
      s << "\n             config not usable here: " << escape_untrusted(e.what()) << "\n";
    }
  }
  s << "status       " << to_string(i.status) << (i.error.empty() ? "" : ": " + i.error) << "\n";
  const int64_t rows = run.steps_recorded();
  s << "steps        " << rows << " of " << i.steps << " recorded";
  if (rows > 0) {
    const auto tokens = run.series_rows<int64_t>("series/tokens_seen", uint64_t(rows - 1), 1);
    s << " (" << tokens[0] << " tokens)";
  }
  s << "\n";
  if (rows > 0) {
    const auto loss = run.series<float>("series/loss");
    const auto val = run.series<float>("series/val_loss");
    s << "loss         first " << fmt("%.6f", loss.front()) << " (step 1), last " << fmt("%.6f", loss.back())
      << " (step " << rows << ")";
    for (int64_t k = rows - 1; k >= 0; --k) {
      if (!std::isnan(val[size_t(k)])) {
        s << "; validation " << fmt("%.6f", val[size_t(k)]) << " (step " << k + 1 << ")";
        break;
      }
    }
    s << "\n";
  }
  if (rows > 0 && run.shape().heads > 0) {  // optim.qk_clip > 0 (series/qk_max_logit, qk_clipped)
    const auto maxima = run.series<float>("series/qk_max_logit");
    const auto clipped = run.series<int64_t>("series/qk_clipped");
    const std::size_t heads = run.shape().heads;
    auto largest = [&](int64_t row) {  // NaN-propagating: a NaN maximum is shown
      float m = maxima[std::size_t(row) * heads];
      for (std::size_t h = 1; h < heads; ++h) {
        const float x = maxima[std::size_t(row) * heads + h];
        if (x > m || std::isnan(x)) m = x;
      }
      return m;
    };
    int64_t total = 0, steps = 0;
    for (int64_t c : clipped) total += c, steps += c > 0 ? 1 : 0;
    s << "qk-clip      largest logit " << fmt("%.6g", largest(0)) << " (step 1), " << fmt("%.6g", largest(rows - 1))
      << " (step " << rows << ") over " << heads << " heads; " << total << " head clips in " << steps << " of " << rows
      << " steps\n";
  }
  if (run.has_final_state()) {
    const TrainerState f = run.read_final_state();
    s << "final state  step " << f.step << ", " << f.updates << " updates\n";
  }
  const auto snapshots = run.snapshot_steps();
  s << "snapshots    ";
  if (snapshots.empty()) s << "none";
  for (std::size_t k = 0; k < snapshots.size(); ++k) s << (k ? ", " : "steps ") << snapshots[k];
  s << "\n";
  uint64_t store_bytes = 0;
  for (const run::StoreEntry& e : run.store_entries()) store_bytes += e.bytes;
  s << "store        " << run::store_dir(run.path()) << ": " << run.store_entries().size() << " files, "
    << fmt("%.1f", double(store_bytes) / (1 << 20)) << " MiB\n";
  s << "states       " << (run.state_steps().empty() ? "none" : "");
  bool first = true;
  for (const run::StoreEntry& e : run.store_entries()) {
    if (!e.is_state()) continue;
    s << (first ? "" : "\n             ") << "step " << e.step << (e.kind & run::kKeptBit ? " (kept)" : " (checkpoint)")
      << "  ";
    first = false;
    try {
      const TrainerState c = run.read_state(e.step);
      s << "good (" << c.updates << " updates)";
    } catch (const Error& err) {
      s << "NOT USABLE: " << escape_untrusted(err.what());
    }
  }
  s << "\n";
  s << "execution    " << i.execution.backend << "; " << i.execution.communicator << ", world size "
    << i.execution.world_size;
  if (!program) s << ", " << i.execution.threads << " threads, micro-leaves " << i.execution.micro_leaves;
  s << "\n";
  if (rows > 0 && !program) {  // rank 0's backend ↔ host bytes and speed (not content: never compared)
    const auto down = run.series<uint64_t>("series/bytes_to_host");
    const auto up = run.series<uint64_t>("series/bytes_from_host");
    const auto tokens = run.series<int64_t>("series/tokens");
    const auto seconds = run.series<double>("timing/step_seconds");
    double t = 0, n = 0;  // steps after the first (warm-up) when there are several
    for (std::size_t k = rows > 1 ? 1 : 0; k < seconds.size(); ++k) t += seconds[k], n += double(tokens[k]);
    s << "traffic      at most " << *std::max_element(down.begin(), down.end()) << " bytes/step to the host, "
      << *std::max_element(up.begin(), up.end()) << " from it; " << fmt("%.0f", t > 0 ? n / t : 0.0) << " tok/s"
      << (rows > 1 ? " (steps 2..)" : "") << "\n";
  }
  s << "build        " << i.compiler << " " << i.build_type << ", simd " << i.simd << "; " << i.fp_flags << "\n";
  s << "fp env       " << i.fp_environment << "\n";
  s << "environment  "
    << (i.execution.environment.empty() ? "not recorded (an older samebits wrote the file)"
                                        : indent_lines(i.execution.environment, "             "))
    << "\n";
  s << "data         "
    << (!i.data_files.empty() ? ""
        : program             ? "not recorded (a PyTorch program's data is what its experiment declares)\n"
                              : "not recorded (an older samebits wrote the file)\n");
  try {
    bool first_file = true;
    for (const data::DataFile& f : data::parse_manifest(i.data_files, run.path() + ": attribute data_files")) {
      s << (first_file ? "" : "             ") << f.role << "  " << escape_untrusted(f.path) << "  "
        << (f.bytes > 0 || f.path.rfind("synthetic:", 0) != 0 ? std::to_string(f.bytes) + " bytes, " : "generated, ")
        << "digest " << det::fingerprint_hex(f.digest) << "\n";
      first_file = false;
    }
  } catch (const Error& err) {
    s << "NOT READABLE: " << err.what() << "\n";
  }
  s << "host         " << i.host << "; started " << i.time_started << ", updated " << i.time_updated << "\n";
  s << "sessions     " << indent_lines(i.time_sessions, "             ") << "\n";
  return s.str();
}

}  // namespace sb::cli
