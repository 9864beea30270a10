// `samebits export`: a run's weights (its final state, or a snapshot or state of a chosen step)
// as a safetensors file in samebits' names, or as a Hugging Face GPT-2 directory (config.json and
// model.safetensors that GPT2LMHeadModel.from_pretrained loads) when the model is GPT-2-shaped
// (core/io/gpt_weights.hpp, docs/EXPORT.md). The run file is read through the checked, isolated
// reader; the values are written bit for bit.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb::cli {

enum class ExportFormat { safetensors, hf };

struct ExportOptions {
  std::string run_path;
  std::optional<int64_t> step;  // a snapshot's or state's step; none: the final state
  ExportFormat format = ExportFormat::safetensors;
  std::string out;  // a file (safetensors) or a directory (hf); never overwritten
};

struct ExportResult {
  int64_t step = 0;
  std::string source;              // "the final state", "the snapshot of step 100", …
  std::vector<std::string> files;  // written, in order
  std::size_t tensors = 0;
  std::size_t parameters = 0;
};

ExportResult export_run(const ExportOptions& options);

}  // namespace sb::cli
