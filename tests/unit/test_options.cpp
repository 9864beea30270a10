// The table of configuration fields as options: INI files and --section.key overrides resolve to
// one Config (command line wins), every bad input is one error naming the key, and the shipped
// configs, --help and docs/CONFIG.md agree with the table.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "samebits/cli/options.hpp"
#include "samebits/core/config_fields.hpp"
#include "samebits/det/error.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSourceRoot = fs::path(__FILE__).parent_path().parent_path().parent_path();

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sb_test_options_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

std::string parse_error(const std::string& ini, const std::vector<std::string>& args) {
  try {
    sb::cli::parse_config(ini, args);
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("no file and no overrides give the defaults") { CHECK(sb::cli::parse_config("", {}) == sb::Config{}); }

TEST_CASE("INI values apply and the command line wins") {
  TempDir dir;
  const std::string ini = dir.write("a.ini",
                                    "# a comment\n"
                                    "[model]\n"
                                    "n_layer = 2   # trailing comment\n"
                                    "norm = rmsnorm\n"
                                    "tied_head = false\n"
                                    "[optim]\n"
                                    "name = adamw\n"
                                    "lr = 3e-4\n"
                                    "adam_betas = 0.8, 0.99\n"
                                    "[train]\n"
                                    "snapshot_steps = 0, 10, 20\n"
                                    "precision = bf16\n"
                                    "[run]\n"
                                    "threads = 3\r\n");
  const sb::Config c = sb::cli::parse_config(ini, {"--model.n_layer", "6", "--optim.lr=0.001", "--run.out", "x.h5"});
  CHECK(c.model.n_layer == 6);
  CHECK(c.model.norm == sb::NormKind::rmsnorm);
  CHECK_FALSE(c.model.tied_head);
  CHECK(c.optim.name == sb::OptimizerName::adamw);
  CHECK(c.optim.lr == 0.001);
  CHECK(c.optim.adam_betas[0] == 0.8);
  CHECK(c.optim.adam_betas[1] == 0.99);
  CHECK(c.train.snapshot_steps == std::vector<int64_t>{0, 10, 20});
  CHECK(c.train.precision == sb::Precision::bf16);
  CHECK(c.run.threads == 3);
  CHECK(c.run.out == "x.h5");
  CHECK(c.model.n_embd == 128);  // untouched keys keep their defaults
}

TEST_CASE("optim.adjust_lr_fn, torch.optim.Muon's name, sets optim.scale") {
  CHECK(sb::cli::parse_config("", {"--optim.adjust_lr_fn", "match_rms_adamw"}).optim.scale == sb::MuonScale::moonlight);
  CHECK(sb::cli::parse_config("", {"--optim.scale", "none", "--optim.adjust_lr_fn=original"}).optim.scale ==
        sb::MuonScale::shape);
  CHECK_THROWS_AS(sb::cli::parse_config("", {"--optim.adjust_lr_fn", "rms"}), sb::Error);
}

TEST_CASE("numerics.mode presets the switches; an explicit switch wins wherever it is given") {
  TempDir dir;
  sb::Config c = sb::cli::parse_config("", {"--numerics.mode", "vendor"});
  CHECK(c.numerics.gemm == sb::GemmMode::vendor);
  CHECK(c.numerics.reduce == sb::ReduceMode::native);
  CHECK(c.numerics.allreduce == sb::AllreduceMode::native);
  CHECK(c.numerics.leaf_sum == sb::LeafSumMode::native);

  c = sb::cli::parse_config("", {"--numerics.leaf_sum", "exact", "--numerics.mode", "vendor"});
  CHECK(c.numerics.leaf_sum == sb::LeafSumMode::exact);
  CHECK(c.numerics.allreduce == sb::AllreduceMode::native);

  c = sb::cli::parse_config("", {"--numerics.gemm", "canonical", "--numerics.mode", "vendor"});
  CHECK(c.numerics.mode == sb::NumericsMode::vendor);
  CHECK(c.numerics.gemm == sb::GemmMode::canonical);
  CHECK(c.numerics.reduce == sb::ReduceMode::native);

  const std::string ini = dir.write("n.ini", "[numerics]\nreduce = native\n");
  c = sb::cli::parse_config(ini, {"--numerics.mode=deterministic"});
  CHECK(c.numerics.reduce == sb::ReduceMode::native);  // explicit in the file
  CHECK(c.numerics.gemm == sb::GemmMode::canonical);
  CHECK_FALSE(sb::is_deterministic(c.numerics));
}

TEST_CASE("unknown keys are errors that suggest the closest key") {
  TempDir dir;
  const std::string typo = dir.write("typo.ini", "[optim]\nlrr = 0.1\n");
  std::string e = parse_error(typo, {});
  CHECK(contains(e, "unknown config key 'optim.lrr' in " + typo));
  CHECK(contains(e, "(did you mean optim.lr?)"));

  const std::string no_section = dir.write("nosection.ini", "warmup = 3\n");
  CHECK(contains(parse_error(no_section, {}), "unknown config key 'warmup'"));
  CHECK(contains(parse_error(no_section, {}), "(did you mean train.warmup?)"));

  const std::string wrong_section = dir.write("wrongsection.ini", "[model]\nlr = 3\n");
  CHECK(contains(parse_error(wrong_section, {}), "(did you mean optim.lr?)"));

  e = parse_error("", {"--train.step", "5"});
  CHECK(contains(e, "unknown config key '--train.step' on the command line (did you mean --train.steps?)"));
  CHECK(contains(parse_error("", {"--zzzzzzzz=1"}), "unknown config key '--zzzzzzzz'"));
  CHECK_FALSE(contains(parse_error("", {"--zzzzzzzz=1"}), "did you mean"));
  CHECK(contains(parse_error("", {"stray"}), "unexpected argument 'stray' on the command line"));
}

TEST_CASE("wrong types name the key, the value and the expected form") {
  TempDir dir;
  CHECK(parse_error("", {"--model.vocab", "abc"}) ==
        "config model.vocab='abc' on the command line is not valid: expected an integer such as 4");
  CHECK(contains(parse_error("", {"--model.vocab", "12.5"}), "model.vocab='12.5'"));
  CHECK(contains(parse_error("", {"--model.vocab", "99999999999"}), "between -2^31 and 2^31-1"));
  CHECK(contains(parse_error("", {"--data.seed", "-1"}), "config data.seed='-1'"));
  CHECK(contains(parse_error("", {"--optim.lr", "fast"}), "expected a finite number"));
  CHECK(contains(parse_error("", {"--optim.lr", "inf"}), "expected a finite number"));
  CHECK(contains(parse_error("", {"--model.tied_head", "maybe"}), "expected true or false"));
  CHECK(contains(parse_error("", {"--optim.name", "sgd"}), "expected one of muon, adamw"));
  CHECK(contains(parse_error("", {"--optim.adam_betas", "0.9"}), "two numbers separated by a comma"));
  CHECK(contains(parse_error("", {"--train.snapshot_steps", "1,,2"}), "train.snapshot_steps='1,,2'"));
  const std::string ini = dir.write("bad.ini", "[train]\nsteps = many\n");
  CHECK(contains(parse_error(ini, {}), "config train.steps='many' in " + ini + " is not valid"));
  const std::string empty_value = dir.write("empty.ini", "[train]\nsteps =\n");
  CHECK(contains(parse_error(empty_value, {}), "config train.steps=''"));
}

TEST_CASE("invalid values, repeated keys, missing files and bad syntax are errors") {
  TempDir dir;
  CHECK(contains(parse_error("", {"--optim.lr", "-0.1"}), "config optim.lr=-0.1 must be a positive"));
  CHECK(contains(parse_error("", {"--model.n_embd", "100", "--model.n_head", "3"}),
                 "config model.n_embd=100 is not divisible by model.n_head=3"));
  CHECK(contains(parse_error("", {"--numerics.leaf_sum", "native"}),
                 "config numerics.leaf_sum=native needs numerics.allreduce=native"));
  CHECK(contains(parse_error("", {"--numerics.mode", "vendor", "--numerics.allreduce", "exact"}),
                 "numerics.leaf_sum=exact"));
  CHECK(contains(parse_error("", {"--train.steps", "5", "--train.steps", "6"}),
                 "config key train.steps is given twice on the command line"));
  const std::string twice = dir.write("twice.ini", "[train]\nsteps = 5\nsteps = 6\n");
  CHECK(contains(parse_error(twice, {}), "config key train.steps is given twice in " + twice));
  const std::string missing = (dir.path / "missing.ini").string();
  CHECK(parse_error(missing, {}) == "config file '" + missing + "' does not exist");
  CHECK(contains(parse_error(dir.path.string(), {}), "is not a regular file"));
  const std::string syntax = dir.write("syntax.ini", "[model]\njust words\n");
  CHECK(contains(parse_error(syntax, {}), "config file '" + syntax + "'"));
  CHECK(contains(parse_error("", {"--train.steps"}), "train.steps"));
  CHECK(parse_error("", {"--optim.lr", "--train.steps", "3"}) ==
        "config key --optim.lr has no value on the command line (it is followed by '--train.steps')");
}

TEST_CASE("the resolved INI text parses back to the identical config") {
  TempDir dir;
  sb::Config c;
  c.model.norm = sb::NormKind::rmsnorm;
  c.model.bias = false;
  c.data.source = sb::DataSource::shards;
  c.data.path = "data/train_*.bin";
  c.data.val_path = "data/val_*.bin";
  c.data.seed = 18446744073709551615ull;
  c.optim.ns_coefficients = sb::NsCoefficients::custom;
  c.optim.ns_custom = {3.4445, -4.775, 2.0315};
  c.optim.lr = 0.1 + 0.2;
  c.optim.weight_decay = 1e-300;
  c.train.precision = sb::Precision::fp16;
  c.train.schedule = sb::Schedule::wsd;
  c.train.snapshot_steps = {0, 150};
  c.numerics = sb::numerics_preset(sb::NumericsMode::vendor);
  c.numerics.gemm = sb::GemmMode::canonical;
  c.run.backend = sb::Device::cuda;
  c.run.progress = sb::Progress::off;
  sb::validate(c);
  const std::string ini = dir.write("resolved.ini", sb::to_ini_text(c));
  const sb::Config back = sb::cli::parse_config(ini, {});
  CHECK(back == c);
  CHECK(sb::to_ini_text(back) == sb::to_ini_text(c));
  CHECK(sb::experiment_id(back) == sb::experiment_id(c));
}

TEST_CASE("the table holds exactly the keys of the resolved INI text") {
  std::set<std::string> ini_keys;
  std::istringstream in(sb::to_ini_text(sb::Config{}));
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
    } else {
      ini_keys.insert(section + "." + line.substr(0, line.find(' ')));
    }
  }
  std::set<std::string> table_keys;
  for (const auto& f : sb::config_fields()) {
    CHECK_MESSAGE(!f.help.empty(), "no help for ", f.key);
    if (f.is_alias()) continue;  // optim.adjust_lr_fn: torch.optim.Muon's name of optim.scale
    CHECK_MESSAGE(table_keys.insert(f.key).second, "duplicate key ", f.key);
  }
  CHECK(table_keys == ini_keys);
  // The option names docs/CONFIG.md promises to scripts and notebooks.
  for (const char* key : {"model.vocab",
                          "model.seq_len",
                          "model.n_layer",
                          "model.n_head",
                          "model.n_embd",
                          "model.norm",
                          "model.tied_head",
                          "data.source",
                          "data.path",
                          "data.seed",
                          "data.leaf_size",
                          "data.leaves",
                          "optim.name",
                          "optim.lr",
                          "optim.weight_decay",
                          "optim.momentum",
                          "optim.nesterov",
                          "optim.ns_steps",
                          "optim.ns_coefficients",
                          "optim.scale",
                          "optim.adam_lr",
                          "optim.adam_betas",
                          "optim.adam_eps",
                          "optim.clip",
                          "train.steps",
                          "train.seed",
                          "train.precision",
                          "train.schedule",
                          "train.warmup",
                          "train.checkpoint_every",
                          "train.snapshot_steps",
                          "train.eval_every",
                          "numerics.mode",
                          "numerics.gemm",
                          "numerics.reduce",
                          "numerics.allreduce",
                          "run.backend",
                          "run.threads",
                          "run.out"}) {
    CHECK_MESSAGE(table_keys.count(key) == 1, "docs/CONFIG.md key missing: ", key);
  }
}

TEST_CASE("the table: sections contiguous in order, rules described, aliases of real keys") {
  std::vector<std::string> order;
  for (const auto& f : sb::config_fields()) {
    INFO(f.key);
    if (order.empty() || order.back() != f.section()) order.emplace_back(f.section());
    CHECK(sb::find_config_field(f.key) == &f);
    CHECK(f.set);
    if (f.is_alias()) {
      CHECK_FALSE(f.text);
      REQUIRE(sb::find_config_field(f.alias_of) != nullptr);
      CHECK_FALSE(sb::find_config_field(f.alias_of)->is_alias());
      CHECK(f.experiment.kind == sb::ExperimentRule::Kind::never);
    } else {
      CHECK(f.text);
    }
    if (f.experiment.kind == sb::ExperimentRule::Kind::when) {
      CHECK(static_cast<bool>(f.experiment.holds));
      CHECK(f.experiment.describe().size() > 5);
    }
  }
  std::vector<std::string> sections;
  for (const auto& s : sb::config_sections()) sections.emplace_back(s.name);
  CHECK(order == sections);  // each section once, in config_sections' order
  CHECK(sb::find_config_field("optim.lrr") == nullptr);
}

TEST_CASE("INI text in memory: messages name its source; text from it is printed escaped") {
  CHECK(sb::cli::parse_config_text("[optim]\nlr = 0.01\n", "the recorded config", {"--train.steps=70"}).optim.lr ==
        0.01);
  const auto text_error = [](const std::string& text) {
    try {
      sb::cli::parse_config_text(text, "the recorded config", {});
    } catch (const sb::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(contains(text_error("[optim]\nlrr = 0.1\n"),
                 "unknown config key 'optim.lrr' in the recorded config (did you mean optim.lr?)"));
  std::string e = text_error("[model]\nnorm = \x1b[31mred\n");
  CHECK(contains(e, "config model.norm='\\x1b[31mred' in the recorded config is not valid"));
  CHECK_FALSE(contains(e, "\x1b"));
  e = text_error(
      "[model]\n\x07"
      "bell = 1\n");
  CHECK(contains(e, "unknown config key 'model.\\x07bell' in the recorded config"));
  CHECK_FALSE(contains(e, "\x07"));
  e = text_error("[model]\njust \x1b words\n");
  CHECK(contains(e, "the recorded config: "));
  CHECK_FALSE(contains(e, "\x1b"));
}

TEST_CASE("--help lists every option with its default, grouped by section") {
  const std::string help = sb::cli::options_help();
  for (const char* section : {"[model]", "[data]", "[optim]", "[train]", "[numerics]", "[run]"}) {
    CHECK(contains(help, section));
  }
  for (const auto& f : sb::config_fields()) CHECK_MESSAGE(contains(help, "--" + f.key + " "), f.key);
  CHECK(contains(help, "--optim.name muon|adamw"));
  CHECK(contains(help, "default 0.02"));
  CHECK(help.find("[model]") < help.find("[data]"));
  CHECK(help.find("--model.vocab") < help.find("--data.source"));
}

TEST_CASE("docs/CONFIG.md holds the generated option reference") {
  const fs::path doc = kSourceRoot / "docs" / "CONFIG.md";
  const std::string begin = "<!-- options: generated from the table of fields by tests/unit/test_options.cpp -->\n";
  const std::string end = "<!-- end of options -->\n";
  std::string text = read_text(doc);
  const std::size_t b = text.find(begin);
  const std::size_t e = text.find(end);
  REQUIRE_MESSAGE(b != std::string::npos, doc.string(), " lacks the line ", begin);
  REQUIRE(e != std::string::npos);
  const std::string generated = sb::cli::options_markdown();
  const std::string current = text.substr(b + begin.size(), e - b - begin.size());
  if (current != generated && std::getenv("SB_UPDATE_DOCS") != nullptr) {
    text.replace(b + begin.size(), e - b - begin.size(), generated);
    std::ofstream(doc, std::ios::binary) << text;
    MESSAGE("rewrote ", doc.string());
    return;
  }
  const bool up_to_date = current == generated;
  CHECK_MESSAGE(up_to_date, doc.string(),
                " is out of date with the table of fields: run this test with SB_UPDATE_DOCS=1 to regenerate it");
}

TEST_CASE("the shipped configs parse, validate and say what they are") {
  const fs::path dir = kSourceRoot / "experiments" / "configs";
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".ini") continue;
    names.insert(entry.path().stem().string());
    INFO(entry.path().string());
    sb::Config c;
    CHECK_NOTHROW(c = sb::cli::parse_config(entry.path().string(), {}));
    CHECK(read_text(entry.path()).rfind("#", 0) == 0);  // opens with its description
  }
  CHECK(names.count("default") == 1);
  CHECK(names.count("adamw") == 1);
  CHECK(names.count("bf16") == 1);
  CHECK(names.count("fp16") == 1);
  CHECK(names.count("text") == 1);
  CHECK(names.count("gpt2_124m") == 1);

  const sb::Config def = sb::cli::parse_config((dir / "default.ini").string(), {});
  CHECK(def.optim.name == sb::OptimizerName::muon);
  CHECK(def.model.n_layer == 4);
  CHECK(def.model.n_embd == 128);
  CHECK(def.model.n_head == 4);
  CHECK(def.model.seq_len == 128);
  CHECK(def.model.vocab == 256);
  CHECK(def.data.source == sb::DataSource::synthetic);
  CHECK(sb::is_deterministic(def.numerics));

  // The named configs are default.ini except where their header says.
  sb::Config adamw = sb::cli::parse_config((dir / "adamw.ini").string(), {});
  CHECK(adamw.optim.name == sb::OptimizerName::adamw);
  adamw.optim = def.optim;
  CHECK(adamw == def);
  sb::Config bf16 = sb::cli::parse_config((dir / "bf16.ini").string(), {});
  CHECK(bf16.train.precision == sb::Precision::bf16);
  bf16.train.precision = def.train.precision;
  CHECK(bf16 == def);
  sb::Config fp16 = sb::cli::parse_config((dir / "fp16.ini").string(), {});
  CHECK(fp16.train.precision == sb::Precision::fp16);
  fp16.train.precision = def.train.precision;
  fp16.train.loss_scale = def.train.loss_scale;
  fp16.train.loss_scale_growth_interval = def.train.loss_scale_growth_interval;
  fp16.train.loss_scale_growth = def.train.loss_scale_growth;
  fp16.train.loss_scale_backoff = def.train.loss_scale_backoff;
  CHECK(fp16 == def);
  sb::Config text = sb::cli::parse_config((dir / "text.ini").string(), {});
  CHECK(text.data.source == sb::DataSource::text);
  CHECK(text.data.path == "/usr/share/games/fortunes/cookie");
  CHECK(text.data.val_path == "/usr/share/games/fortunes/people");
  text.data.source = def.data.source;
  text.data.path = def.data.path;
  text.data.val_path = def.data.val_path;
  text.train.eval_leaves = def.train.eval_leaves;
  CHECK(text == def);
  // gpt2_124m.ini is its own experiment: GPT-2 small on llm.c shards.
  const sb::Config gpt2 = sb::cli::parse_config((dir / "gpt2_124m.ini").string(), {});
  CHECK(gpt2.model.vocab == 50257);
  CHECK(gpt2.model.seq_len == 1024);
  CHECK(gpt2.model.n_layer == 12);
  CHECK(gpt2.model.n_head == 12);
  CHECK(gpt2.model.n_embd == 768);
  CHECK(gpt2.model.tied_head);
  CHECK(gpt2.data.source == sb::DataSource::shards);
  CHECK(gpt2.optim.name == sb::OptimizerName::muon);
  CHECK(sb::is_deterministic(gpt2.numerics));
  // llama_tiny.ini is default.ini with a Llama-style block; llama_124m.ini gpt2_124m.ini with one.
  sb::Config llama = sb::cli::parse_config((dir / "llama_tiny.ini").string(), {});
  CHECK(llama.model.n_kv_head == 2);
  CHECK(llama.model.gqa());
  CHECK_FALSE(llama.model.qk_norm);
  CHECK(llama.model.mlp == sb::MlpKind::swiglu);
  CHECK(llama.model.pos == sb::PosKind::rope);
  llama.model = def.model;
  CHECK(llama == def);
  sb::Config llama_big = sb::cli::parse_config((dir / "llama_124m.ini").string(), {});
  CHECK(llama_big.model.kv_heads() == 4);
  CHECK(llama_big.model.ffn() == 2048);
  llama_big.model = gpt2.model;
  CHECK(llama_big == gpt2);
  // moe_tiny.ini is default.ini with a Mixture-of-Experts MLP.
  sb::Config moe = sb::cli::parse_config((dir / "moe_tiny.ini").string(), {});
  CHECK(moe.model.moe_experts == 8);
  CHECK(moe.model.moe_top_k == 2);
  CHECK(moe.model.moe_shared_experts == 1);
  CHECK(moe.model.moe_block(0));
  moe.model = def.model;
  CHECK(moe == def);
}
