// export_run.hpp: choose the weights (final state, snapshot or state), map them to the format's
// names and layouts, write the files atomically (safetensors.hpp), refusing to overwrite.
#include "samebits/cli/export_run.hpp"

#include <algorithm>
#include <filesystem>

#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/llama_weights.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

std::string steps_list(const std::vector<int64_t>& steps) {
  if (steps.empty()) return "none";
  std::string s;
  for (const int64_t v : steps) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

void refuse_existing(const std::string& path) {
  std::error_code ec;
  SB_CHECK(!fs::exists(path, ec), "'", path,
           "' already exists: samebits export never overwrites; remove it or "
           "choose another OUT");
}

}  // namespace

ExportResult export_run(const ExportOptions& options) {
  const run::RunReader run = run::RunReader::open(options.run_path);
  const Config config = recorded_config(run);
  if (options.format == ExportFormat::hf) {
    const std::string gpt2 = io::gpt2_mismatch(config.model), llama = io::llama_mismatch(config.model);
    SB_CHECK(gpt2.empty() || llama.empty(), options.run_path, ": its model is neither GPT-2-shaped (", gpt2,
             ") nor Llama-shaped (", llama, "), so it has no Hugging Face form; export it with --format safetensors");
  }
  ExportResult result;
  std::vector<float> flat;
  const std::vector<int64_t> snapshots = run.snapshot_steps();
  const std::vector<int64_t> states = run.state_steps();
  if (!options.step) {
    SB_CHECK(run.has_final_state(), options.run_path, " is not finished (status ", to_string(run.info().status), ", ",
             run.steps_recorded(), " of ", run.info().steps,
             " steps) and so has no final state: choose --step N of its "
             "snapshots (",
             steps_list(snapshots), ") or states (", steps_list(states), ")");
    const TrainerState& state = run.read_final_state();
    flat = state.weights;
    result.step = state.step;
    result.source = "the final state";
  } else {
    const int64_t step = *options.step;
    result.step = step;
    if (std::binary_search(snapshots.begin(), snapshots.end(), step)) {
      flat = run.read_snapshot(step);
      result.source = "the snapshot of step " + std::to_string(step);
    } else if (std::binary_search(states.begin(), states.end(), step)) {
      flat = run.read_state(step).weights;
      result.source = "the state of step " + std::to_string(step);
    } else {
      SB_FAIL(options.run_path, " holds no parameters of step ", step, ": its snapshots are of steps ",
              steps_list(snapshots), ", its states of steps ", steps_list(states),
              " (train with --train.snapshot_steps to record more)");
    }
  }
  const io::WeightsNaming naming =
      options.format == ExportFormat::hf ? io::hf_naming(config.model) : io::WeightsNaming::samebits;
  const std::vector<io::SafeTensor> tensors = io::gpt_tensors(config.model, flat, naming);
  result.tensors = tensors.size();
  for (const io::SafeTensor& t : tensors) result.parameters += t.data.size();
  const io::SafetensorsMetadata metadata = {
      {"format", "pt"},  // what transformers' loader requires of a PyTorch checkpoint
      {"samebits_experiment_id", run.info().experiment_id},
      {"samebits_step", std::to_string(result.step)},
      {"samebits_model",
       "vocab=" + std::to_string(config.model.vocab) + " seq_len=" + std::to_string(config.model.seq_len) +
           " n_layer=" + std::to_string(config.model.n_layer) + " n_head=" + std::to_string(config.model.n_head) +
           " n_embd=" + std::to_string(config.model.n_embd) + " norm=" + std::string(config_name(config.model.norm)) +
           " tied_head=" + (config.model.tied_head ? "true" : "false") +
           " bias=" + (config.model.bias ? "true" : "false") + " mlp=" + std::string(config_name(config.model.mlp)) +
           " ffn_dim=" + std::to_string(config.model.ffn()) + " pos=" + std::string(config_name(config.model.pos)) +
           " n_kv_head=" + std::to_string(config.model.kv_heads()) +
           " qk_norm=" + (config.model.qk_norm ? "true" : "false")}};
  if (options.format == ExportFormat::safetensors) {
    refuse_existing(options.out);
    io::write_safetensors(options.out, tensors, metadata);
    result.files.push_back(options.out);
    return result;
  }
  const std::string weights = (fs::path(options.out) / "model.safetensors").string();
  const std::string config_json = (fs::path(options.out) / "config.json").string();
  refuse_existing(weights);
  refuse_existing(config_json);
  std::error_code ec;
  fs::create_directories(options.out, ec);
  SB_CHECK(!ec, "cannot create the directory '", options.out, "': ", ec.message());
  io::write_safetensors(weights, tensors, metadata);
  const std::string json = io::hf_config_json(config.model);
  h5::write_file_atomically(config_json, [&](const std::string& tmp) {
    FILE* f = std::fopen(tmp.c_str(), "wb");
    SB_CHECK(f != nullptr, "cannot create '", tmp, "'");
    const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    SB_CHECK(std::fclose(f) == 0 && ok, "writing '", config_json, "' failed (disk full?)");
  });
  result.files = {config_json, weights};
  return result;
}

}  // namespace sb::cli
