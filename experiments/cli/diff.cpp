// samebits diff A.h5 B.h5 [--json]: compares two run files (diff.hpp); samebits diff
// --side-by-side A.ini [B.ini] …: trains two configurations side by side in this process and
// compares them as they go (divergence.hpp). Exit 0 identical, 1 different, 2 error.
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr const char* kUsage =
    "usage: samebits diff A.h5 B.h5 [--json] [--threshold X] [--no-agreement]\n"
    "       samebits diff --side-by-side A.ini [B.ini] [--steps N] [--every K]\n"
    "                     [--set [a.|b.]section.key=VALUE …] [--json] [--threshold X] [--no-agreement]\n"
    "\n"
    "Compares two run files: whether they are the same experiment (and which fields differ), the\n"
    "first step where any recorded bit differs (which series, which tensors' parameter and gradient\n"
    "fingerprints), the loss gap over the steps, and at every step where both files hold the\n"
    "parameters (snapshots, final states) each tensor's fraction of differing elements, max ULP\n"
    "distance and relative L2 distance; then the whole-model distance curve over those steps, its\n"
    "growth rate (least-squares slope of ln rel-L2 per step after the first divergence), jump step\n"
    "and threshold step, and the prediction agreement (argmax disagreement, logit correlation) of\n"
    "each shared state on the first validation sequences of A's experiment. Communication traffic\n"
    "and wall time are not compared.\n"
    "\n"
    "--side-by-side trains A.ini and B.ini (B.ini defaults to A.ini) in this process on the CPU,\n"
    "one step of each in turn, with no run files, and reports the first divergent step (loss,\n"
    "gradient norm, parameter and gradient fingerprints), the loss gap, the distance after step 0,\n"
    "every K steps and the last, its growth and the final prediction agreement.\n"
    "\n"
    "  --json              the same as one JSON object (docs/STUDIES.md lists its fields)\n"
    "  --threshold X       the threshold step is the first with rel-L2 >= X (default 0.01)\n"
    "  --no-agreement      skip the prediction agreement (the forward passes)\n"
    "  --steps N           side by side: steps to train (default A's train.steps)\n"
    "  --every K           side by side: a distance point every K steps (default 1)\n"
    "  --set KEY=VALUE     side by side: a config override; a.section.key for A only, b.section.key\n"
    "                      for B only, section.key for both (repeatable; e.g. --set\n"
    "                      b.perturb.tensor=h.0.attn.qkv.w --set b.perturb.step=5)\n"
    "\n"
    "Exit codes: 0 identical, 1 different, 2 error.\n";

struct DiffArguments {
  std::vector<std::string> files;
  bool json = false;
  bool side_by_side = false;
  bool agreement = true;
  double threshold = kDistanceThreshold;
  int64_t steps = 0;
  int64_t every = 1;
  std::map<std::string, std::string> set_both, set_a, set_b;  // section.key → value
};

// "a.section.key=VALUE" → set_a, "b.…" → set_b, "section.key=VALUE" → set_both.
void add_setting(DiffArguments& args, const std::string& text) {
  const std::size_t eq = text.find('=');
  SB_CHECK(eq != std::string::npos && eq > 0, "samebits diff --set '", text,
           "': expected [a.|b.]section.key=VALUE, e.g. b.perturb.tensor=wte");
  std::string key = text.substr(0, eq);
  const std::string value = text.substr(eq + 1);
  auto* target = &args.set_both;
  const bool sided = key.find('.', key.find('.') + 1) != std::string::npos;  // two dots or more
  if (sided && key.rfind("a.", 0) == 0) target = &args.set_a;
  else if (sided && key.rfind("b.", 0) == 0) target = &args.set_b;
  else SB_CHECK(!sided, "samebits diff --set '", text, "': a key with a side starts with a. or b.");
  if (target != &args.set_both) key = key.substr(2);
  (*target)[key] = value;
}

DiffArguments parse_arguments(const std::vector<std::string>& argv, bool& help) {
  DiffArguments args;
  std::vector<std::string> settings;
  help = !Arguments("diff")
              .flag("json", args.json)
              .flag("side-by-side", args.side_by_side)
              .flag("no-agreement", args.agreement, false)
              .number("threshold", args.threshold)
              .integer("steps", args.steps, 1)
              .integer("every", args.every, 1)
              .texts("set", settings)
              .parse(argv, args.files);
  if (help) return args;
  for (const std::string& s : settings) add_setting(args, s);
  SB_CHECK(args.threshold > 0, "samebits diff --threshold ", args.threshold, ": use a positive distance such as 0.01");
  if (!args.side_by_side) {
    SB_CHECK(settings.empty() && args.steps == 0 && args.every == 1,
             "samebits diff: --set, --steps and --every belong to --side-by-side");
  }
  return args;
}

// The overrides of one side, as parse_config's --section.key=VALUE tokens.
std::vector<std::string> overrides(const DiffArguments& args, const std::map<std::string, std::string>& side) {
  std::map<std::string, std::string> merged = args.set_both;
  for (const auto& [key, value] : side) merged[key] = value;
  std::vector<std::string> out;
  for (const auto& [key, value] : merged) out.push_back("--" + key + "=" + value);
  return out;
}

int run_side_by_side(const DiffArguments& args) {
  SB_CHECK(args.files.size() == 1 || args.files.size() == 2,
           "samebits diff --side-by-side expects one or two "
           "config files, got ",
           args.files.size(), " (samebits diff --side-by-side A.ini [B.ini])");
  const Config a = parse_config(args.files[0], overrides(args, args.set_a));
  const Config b = parse_config(args.files.back(), overrides(args, args.set_b));
  const int64_t total = args.steps > 0 ? args.steps : a.train.steps;
  const bool bar = progress_bar_wanted(a.run.progress);
  ProgressDisplay progress(std::cerr, bar, a.run.log_every, 0, total, "side by side");
  auto last = std::chrono::steady_clock::now();
  SideBySideOptions options;
  options.threshold = args.threshold;
  options.agreement = args.agreement;
  options.progress = [&](int64_t step, float loss_a, float, const DistancePoint*) {
    if (step == 0) return;
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    const int64_t tokens = 2 * a.data.leaves * a.data.leaf_size * a.model.seq_len;
    progress.update(step, tokens, seconds, loss_a, NAN);
  };
  const SideBySide s = side_by_side(a, b, args.steps, args.every, options);
  progress.finish();
  std::cout << (args.json ? side_by_side_json(s) : side_by_side_text(s));
  return s.identical() ? kExitOk : kExitDifferent;
}

int run_diff(const std::vector<std::string>& argv) {
  bool help = false;
  const DiffArguments args = parse_arguments(argv, help);
  if (help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (args.side_by_side) return run_side_by_side(args);
  SB_CHECK(args.files.size() == 2, "expected two run files, got ", args.files.size(), " (samebits diff A.h5 B.h5)");
  const run::RunReader a = run::RunReader::open(args.files[0]);
  const run::RunReader b = run::RunReader::open(args.files[1]);
  DiffOptions options;
  options.threshold = args.threshold;
  options.agreement = args.agreement;
  const RunDiff d = diff_runs(a, b, options);
  std::cout << (args.json ? diff_json(d) : diff_text(d));
  return d.identical() ? kExitOk : kExitDifferent;
}

const Registrar kDiff{{"diff",
                       "compare two run files (or two configs trained side by side): first divergent step, "
                       "ULP table, distance growth, prediction agreement (exit 0 = identical)",
                       run_diff}};

}  // namespace
}  // namespace sb::cli
