// The resolved INI text and the experiment text are recorded values: run files store them and the
// experiment id hashes the latter, so both must stay byte for byte what they were for every config.
// This test holds them for the shipped configs and overrides that reach every conditional key, in
// tests/unit/config_text.golden (SB_UPDATE_GOLDEN=1 rewrites it; see docs/CONFIG.md before you do).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "samebits/cli/options.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSourceRoot = fs::path(__FILE__).parent_path().parent_path().parent_path();

struct Case {
  const char* name;
  const char* config;  // experiments/configs/<config>.ini, or "" for none
  std::vector<std::string> overrides;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"defaults", "", {}},
      {"default.ini", "default", {}},
      {"adamw.ini", "adamw", {}},
      {"bf16.ini", "bf16", {}},
      {"fp16.ini", "fp16", {}},
      {"text.ini", "text", {}},
      {"gpt2_124m.ini", "gpt2_124m", {}},
      {"llama_tiny.ini", "llama_tiny", {}},
      {"llama_124m.ini", "llama_124m", {}},
      {"moe_tiny.ini", "moe_tiny", {}},
      {"moe with the sigmoid router",
       "moe_tiny",
       {"--model.moe_router", "sigmoid", "--model.moe_capacity", "1.25", "--model.moe_every", "2"}},
      {"qk_norm and one key/value head", "llama_tiny", {"--model.qk_norm", "true", "--model.n_kv_head", "1"}},
      {"adamw with Muon keys set", "adamw", {"--optim.momentum", "0.9", "--optim.ns_steps=3", "--optim.adam_lr=1e-3"}},
      {"normuon", "default", {"--optim.name", "normuon", "--optim.normuon_beta2", "0.9"}},
      {"Muon variants",
       "default",
       {"--optim.extra_scale", "0.2", "--optim.scale", "max_dim", "--optim.split_qkv", "true", "--optim.cautious_wd",
        "on", "--optim.qk_clip", "100", "--optim.momentum_warmup", "10", "--optim.momentum_warmup_start", "0.8",
        "--optim.weight_decay", "0.1", "--optim.nesterov", "false"}},
      {"custom coefficients",
       "default",
       {"--optim.ns_coefficients", "custom", "--optim.ns_custom=3.4445, -4.775, 2.0315"}},
      {"polar express 8", "", {"--optim.ns_coefficients", "polar_express_8", "--optim.ns_steps", "8"}},
      {"wsd", "default", {"--train.schedule", "wsd", "--train.decay_fraction", "0.25", "--train.min_lr_ratio", "0"}},
      {"constant", "default", {"--train.schedule", "constant", "--train.min_lr_ratio", "0.5"}},
      {"adaptive", "default", {"--train.schedule", "adaptive", "--train.adaptive_beta", "0.8"}},
      {"fp16 loss scale",
       "fp16",
       {"--train.loss_scale", "1024", "--train.loss_scale_growth_interval", "10", "--train.loss_scale_growth", "4",
        "--train.loss_scale_backoff", "0.25"}},
      {"order seed", "default", {"--data.order_seed", "7", "--data.seed", "18446744073709551615"}},
      {"swiglu", "default", {"--model.mlp", "swiglu", "--model.ffn_dim", "352", "--model.norm", "rmsnorm"}},
      {"rope", "default", {"--model.pos", "rope", "--model.rope_theta", "500000"}},
      {"perturbation",
       "default",
       {"--perturb.tensor", "wte", "--perturb.index", "5", "--perturb.ulps", "-2", "--perturb.step", "3"}},
      {"vendor numerics with canonical gemm", "default", {"--numerics.mode", "vendor", "--numerics.gemm", "canonical"}},
      {"native allreduce", "", {"--numerics.allreduce", "native"}},
      {"initial weights",
       "default",
       {"--train.init", "/nonexistent/model.safetensors", "--train.init_digest", "0123456789abcdef"}},
      {"recording and execution keys",
       "default",
       {"--train.checkpoint_every",
        "7",
        "--train.snapshot_steps",
        "0, 5,10",
        "--train.keep_states",
        "5",
        "--run.threads",
        "3",
        "--run.out",
        "x.h5",
        "--run.log_every",
        "2",
        "--run.progress",
        "off",
        "--run.backend",
        "cuda",
        "--train.eval_every",
        "0",
        "--train.eval_leaves",
        "2"}},
      {"synthetic keys under a file source", "text", {"--data.doc_len", "64", "--data.mix_recall", "0.5"}},
      {"torch's adjust_lr_fn", "gpt2_124m", {"--optim.adjust_lr_fn", "match_rms_adamw"}},
      {"model and exact numbers", "", {"--model.norm",       "rmsnorm",   "--model.bias",         "false",
                                       "--model.tied_head",  "false",     "--optim.lr",           "0.30000000000000004",
                                       "--optim.adam_eps",   "1e-300",    "--optim.weight_decay", "-0",
                                       "--optim.adam_betas", "0.8,0.999", "--optim.clip",         "0",
                                       "--model.n_embd",     "96",        "--model.n_head",       "3",
                                       "--model.vocab",      "300"}},
      {"shards",
       "bf16",
       {"--data.source", "shards", "--data.path", "a b/train_*.bin", "--data.val_path", "a b/val_*.bin",
        "--data.leaf_size", "2", "--data.leaves", "3", "--train.steps", "40", "--train.warmup", "0"}},
      {"synthetic language",
       "",
       {"--data.doc_len", "33", "--data.mix_markov", "0.5", "--data.mix_grammar", "0.25", "--data.mix_mark", "0.125",
        "--data.mix_recall", "0.125", "--data.markov_run", "3", "--data.span_min", "2", "--data.span_max", "9",
        "--data.max_depth", "3"}},
  };
  return all;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every case's texts, as the golden file holds them.
std::string generated() {
  std::string out =
      "# The resolved INI text and the experiment text of the configs of tests/unit/test_config_text.cpp.\n"
      "# Recorded values: never edit by hand.\n";
  for (const Case& c : cases()) {
    const std::string path =
        *c.config == '\0' ? "" : (kSourceRoot / "experiments" / "configs" / (std::string(c.config) + ".ini")).string();
    const sb::Config config = sb::cli::parse_config(path, c.overrides);
    out += "\n@@@@ case " + std::string(c.name) + "\n@@@@ experiment id " + sb::experiment_id(config) +
           "\n@@@@ ini text\n" + sb::to_ini_text(config) + "@@@@ experiment text\n" + sb::experiment_text(config);
  }
  return out;
}

}  // namespace

TEST_CASE("the INI and experiment texts of every case are the recorded ones, byte for byte") {
  const fs::path golden = kSourceRoot / "tests" / "unit" / "config_text.golden";
  const std::string now = generated();
  if (std::getenv("SB_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << now;
    MESSAGE("rewrote ", golden.string());
    return;
  }
  const std::string recorded = read_text(golden);
  REQUIRE_MESSAGE(!recorded.empty(), golden.string(), " is missing");
  // Compare case by case for a readable failure, then the whole text.
  std::istringstream a(recorded), b(now);
  std::string line_a, line_b;
  int line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_b = static_cast<bool>(std::getline(b, line_b));
    ++line;
    if (!more_a && !more_b) break;
    if (line_a != line_b || more_a != more_b) {
      FAIL_CHECK(golden.string(), " line ", line, ": recorded '", line_a, "', now '", line_b, "'");
      break;
    }
  }
  CHECK(recorded == now);
}

TEST_CASE("every case's resolved INI text parses back to the identical config") {
  for (const Case& c : cases()) {
    INFO(c.name);
    const std::string path =
        *c.config == '\0' ? "" : (kSourceRoot / "experiments" / "configs" / (std::string(c.config) + ".ini")).string();
    const sb::Config config = sb::cli::parse_config(path, c.overrides);
    const sb::Config back = sb::cli::parse_config_text(sb::to_ini_text(config), "the resolved text", {});
    CHECK(back == config);
    CHECK(sb::experiment_text(back) == sb::experiment_text(config));
  }
}
