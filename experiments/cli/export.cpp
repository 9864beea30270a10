// samebits export RUN.h5 [--step N] [--format hf|safetensors] OUT: a run's weights for other tools
// (export_run.hpp). Exit 0 written, 2 error (nothing is overwritten).
#include <cstdio>
#include <iostream>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/export_run.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits export RUN.h5 [--step N] [--format safetensors|hf] OUT\n"
    "\n"
    "Writes the weights of a run — its final state, or with --step N the snapshot or state of step N\n"
    "(train.snapshot_steps, train.keep_states, checkpoints) — for other tools, bit for bit as trained.\n"
    "\n"
    "  --format safetensors  (default) OUT is one .safetensors file with samebits' tensor names and\n"
    "                        shapes (wte (V, C), h.0.attn.qkv.w (3C, C), … as `samebits inspect` and\n"
    "                        docs/FORMAT.md name them), F32\n"
    "  --format hf           OUT is a Hugging Face GPT-2 directory: config.json and model.safetensors\n"
    "                        with GPT2LMHeadModel's names (transformer.h.0.attn.c_attn.weight, …;\n"
    "                        linear weights [in, out] as HF's Conv1D, the head tied to wte):\n"
    "                        transformers.GPT2LMHeadModel.from_pretrained(OUT). Needs a GPT-2-shaped\n"
    "                        model: model.norm=layernorm, model.bias=true, model.tied_head=true\n"
    "  --step N              the parameters after step N (0: the initialisation) instead of the final\n"
    "                        state; needed for a run that has not finished\n"
    "\n"
    "Either file starts a new run: samebits train --train.init OUT (docs/EXPORT.md). Existing files\n"
    "are never overwritten. Exit codes: 0 written, 2 error.\n";

int run_export(const std::vector<std::string>& args) {
  ExportOptions options;
  int64_t step = -1;
  std::string format = "safetensors";
  std::vector<std::string> positional;
  if (!Arguments("export").integer("step", step, 0).text("format", format).parse(args, positional)) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (step >= 0) options.step = step;
  SB_CHECK(format == "hf" || format == "safetensors", "samebits export --format '", format,
           "': expected safetensors or hf");
  options.format = format == "hf" ? ExportFormat::hf : ExportFormat::safetensors;
  SB_CHECK(positional.size() == 2,
           "expected a run file and an output (samebits export RUN.h5 [--step N] "
           "[--format safetensors|hf] OUT)");
  options.run_path = positional[0];
  options.out = positional[1];
  const ExportResult r = export_run(options);
  std::printf("exported %s of %s: %zu tensors, %zu parameters\n", r.source.c_str(), options.run_path.c_str(), r.tensors,
              r.parameters);
  for (const std::string& f : r.files) std::printf("  %s\n", f.c_str());
  return kExitOk;
}

const Registrar kExport{
    {"export", "write a run's weights as safetensors or a Hugging Face GPT-2 directory", run_export}};

}  // namespace
}  // namespace sb::cli
