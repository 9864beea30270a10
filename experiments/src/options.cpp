// The configuration registry: one table binding each INI key / --section.key option to a field of
// sb::Config, with its parser and help. Boost.Program_options reads the INI file and the command
// line; this file turns the raw text into typed fields with errors that name the key and value.
#include "samebits/cli/options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>

#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace po = boost::program_options;

// A value that does not parse: the message says what was expected (the caller adds key and value).
struct BadValue {
  std::string expected;
};

std::string trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return std::string(s);
}

int64_t parse_int(std::string_view text) {
  const std::string s = trim(text);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw BadValue{"an integer such as 4"};
  }
  return v;
}

uint64_t parse_u64(std::string_view text) {
  const std::string s = trim(text);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw BadValue{"an integer from 0 to 18446744073709551615"};
  }
  return v;
}

double parse_double(std::string_view text) {
  std::string s = trim(text);
  if (!s.empty() && s.front() == '+') s.erase(0, 1);
  double v = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    throw BadValue{"a finite number such as 0.02 or 3e-4"};
  }
  return v;
}

bool parse_bool(std::string_view text) {
  const std::string s = trim(text);
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw BadValue{"true or false"};
}

template <class E>
std::string enum_choices(const char* separator) {
  std::string out;
  for (const auto name : EnumNames<E>::names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

template <class E>
E parse_enum(std::string_view text) {
  if (const auto v = config_enum<E>(trim(text))) return *v;
  throw BadValue{"one of " + enum_choices<E>(", ")};
}

// Comma-separated items; the empty text is the empty list.
template <class T>
std::vector<T> parse_list(std::string_view text, T (*parse_item)(std::string_view)) {
  std::vector<T> out;
  if (trim(text).empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    out.push_back(parse_item(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Option {
  std::string key;
  std::string value_name;
  std::string help;
  std::function<void(Config&, std::string_view)> set;  // throws BadValue
  std::string default_note;  // replaces the default from Config{} in help (numerics switches)
};

// Binds `key` to the field `access(config)` returns, choosing the parser from the field's type.
template <class Access>
Option bind(std::string key, Access access, std::string help) {
  using Field = std::remove_reference_t<decltype(access(std::declval<Config&>()))>;
  Option o;
  o.key = std::move(key);
  o.help = std::move(help);
  o.set = [access](Config& c, std::string_view text) {
    Field& target = access(c);
    if constexpr (std::is_same_v<Field, bool>) {
      target = parse_bool(text);
    } else if constexpr (std::is_same_v<Field, int>) {
      const int64_t v = parse_int(text);
      if (v < INT32_MIN || v > INT32_MAX) throw BadValue{"an integer between -2^31 and 2^31-1"};
      target = static_cast<int>(v);
    } else if constexpr (std::is_same_v<Field, int64_t>) {
      target = parse_int(text);
    } else if constexpr (std::is_same_v<Field, uint64_t>) {
      target = parse_u64(text);
    } else if constexpr (std::is_same_v<Field, double>) {
      target = parse_double(text);
    } else if constexpr (std::is_same_v<Field, std::string>) {
      target = trim(text);
    } else if constexpr (std::is_same_v<Field, std::vector<double>>) {
      target = parse_list<double>(text, parse_double);
    } else if constexpr (std::is_same_v<Field, std::vector<int64_t>>) {
      target = parse_list<int64_t>(text, parse_int);
    } else if constexpr (std::is_same_v<Field, std::array<double, 2>>) {
      const auto v = parse_list<double>(text, parse_double);
      if (v.size() != 2) throw BadValue{"two numbers separated by a comma, such as 0.9, 0.95"};
      target = {v[0], v[1]};
    } else {
      static_assert(std::is_enum_v<Field>, "unsupported config field type");
      target = parse_enum<Field>(text);
    }
  };
  if constexpr (std::is_same_v<Field, bool>) o.value_name = "BOOL";
  else if constexpr (std::is_integral_v<Field>) o.value_name = "INT";
  else if constexpr (std::is_same_v<Field, double>) o.value_name = "FLOAT";
  else if constexpr (std::is_same_v<Field, std::string>) o.value_name = "STRING";
  else if constexpr (std::is_same_v<Field, std::vector<double>>) o.value_name = "FLOAT,…";
  else if constexpr (std::is_same_v<Field, std::vector<int64_t>>) o.value_name = "INT,…";
  else if constexpr (std::is_same_v<Field, std::array<double, 2>>) o.value_name = "FLOAT,FLOAT";
  else o.value_name = enum_choices<Field>("|");
  return o;
}

// bind() for config.SECTION.FIELD.
#define SB_FIELD(field) [](Config& c) -> auto& { return c.field; }

struct Section {
  const char* name;
  const char* title;
};

constexpr Section kSections[] = {
    {"model", "the GPT model (DESIGN.md §3)"},
    {"data", "the token source and the global batch"},
    {"optim", "the optimizer: Muon for hidden matrices with AdamW for the rest, or AdamW alone"},
    {"train", "the loop: steps, schedule, precision, validation and what is recorded"},
    {"perturb", "one deliberate change of one weight, for divergence studies; part of the experiment when tensor is set"},
    {"numerics", "numerics switches (DESIGN.md §1); part of the experiment"},
    {"run", "execution configuration: never part of the experiment id"},
};

std::vector<Option> build_registry() {
  std::vector<Option> t;
  // [model]
  t.push_back(bind("model.vocab", SB_FIELD(model.vocab), "vocabulary size; token ids are 0 … vocab-1 (at least 256 for text data)"));
  t.push_back(bind("model.seq_len", SB_FIELD(model.seq_len), "tokens per sequence (the context length)"));
  t.push_back(bind("model.n_layer", SB_FIELD(model.n_layer), "number of transformer blocks"));
  t.push_back(bind("model.n_head", SB_FIELD(model.n_head), "attention heads per block; n_embd must be a multiple of it"));
  t.push_back(bind("model.n_embd", SB_FIELD(model.n_embd), "model width (embedding dimension)"));
  t.push_back(bind("model.norm", SB_FIELD(model.norm), "normalisation of the pre-norm blocks and the final norm"));
  t.push_back(bind("model.tied_head", SB_FIELD(model.tied_head), "the LM head reuses the token embedding matrix"));
  t.push_back(bind("model.bias", SB_FIELD(model.bias), "biases in the linear layers and the norms"));
  // [data]
  t.push_back(bind("data.source", SB_FIELD(data.source), "synthetic: the embedded synthetic language; shards: llm.c/nanoGPT .bin token files (path is a glob); text: a file read as bytes; hdf5: a 1-D integer token dataset"));
  t.push_back(bind("data.path", SB_FIELD(data.path), "the file or glob to read; empty for synthetic"));
  t.push_back(bind("data.val_path", SB_FIELD(data.val_path), "validation data of a file source, in the same form as path; empty for synthetic (its validation stream is separate)"));
  t.push_back(bind("data.seed", SB_FIELD(data.seed), "seed of the data order and of the synthetic language"));
  t.push_back(bind("data.order_seed", SB_FIELD(data.order_seed), "reseeds the sampling order alone: 0 = the order data.seed gives; n > 0 = a file source's epochs permuted by n, the synthetic source's first steps × leaves × leaf_size windows read in an order permuted by n (the language and the validation set stay)"));
  t.push_back(bind("data.leaf_size", SB_FIELD(data.leaf_size), "sequences per leaf, the unit of exact gradient accumulation (DESIGN.md §1.1)"));
  t.push_back(bind("data.leaves", SB_FIELD(data.leaves), "leaves per step; the global batch is leaves × leaf_size sequences on any number of ranks"));
  t.push_back(bind("data.doc_len", SB_FIELD(data.synthetic.doc_len), "synthetic: tokens per document, BOS included"));
  t.push_back(bind("data.mix_markov", SB_FIELD(data.synthetic.mix_markov), "synthetic: relative weight of Zipfian Markov runs"));
  t.push_back(bind("data.mix_grammar", SB_FIELD(data.synthetic.mix_grammar), "synthetic: relative weight of bracket-grammar sentences with agreement"));
  t.push_back(bind("data.mix_mark", SB_FIELD(data.synthetic.mix_mark), "synthetic: relative weight of marked spans"));
  t.push_back(bind("data.mix_recall", SB_FIELD(data.synthetic.mix_recall), "synthetic: relative weight of recalls (exact copies of a marked span)"));
  t.push_back(bind("data.markov_run", SB_FIELD(data.synthetic.markov_run), "synthetic: mean length of a Markov run, 1 … 1000"));
  t.push_back(bind("data.span_min", SB_FIELD(data.synthetic.span_min), "synthetic: shortest marked span"));
  t.push_back(bind("data.span_max", SB_FIELD(data.synthetic.span_max), "synthetic: longest marked span"));
  t.push_back(bind("data.max_depth", SB_FIELD(data.synthetic.max_depth), "synthetic: deepest bracket nesting, 0 … 16"));
  // [optim]
  t.push_back(bind("optim.name", SB_FIELD(optim.name), "muon: Muon for 2-D hidden matrices, AdamW for embeddings, head, norm gains and biases; normuon: the same with NorMuon's per-row normalisation of the update; adamw: AdamW for everything"));
  t.push_back(bind("optim.lr", SB_FIELD(optim.lr), "peak learning rate (of the Muon matrices, or of everything under adamw)"));
  t.push_back(bind("optim.weight_decay", SB_FIELD(optim.weight_decay), "decoupled weight decay W ← W·(1 − lr·wd); never applied to norm gains and biases"));
  t.push_back(bind("optim.momentum", SB_FIELD(optim.momentum), "Muon momentum μ (sum form M ← μ·M + G)"));
  t.push_back(bind("optim.nesterov", SB_FIELD(optim.nesterov), "Muon Nesterov momentum: orthogonalise G + μ·M instead of M"));
  t.push_back(bind("optim.ns_steps", SB_FIELD(optim.ns_steps), "Newton–Schulz iterations of Muon"));
  t.push_back(bind("optim.ns_coefficients", SB_FIELD(optim.ns_coefficients), "Newton–Schulz coefficient table: keller (3.4445, -4.7750, 2.0315) every step, polar_express per-step tuples (the paper's), polar_express_8 (Emerging-Optimizers' 8 tuples; ns_steps >= 8), polar_express_5 (modded-nanogpt's 5 tuples), quintic (Emerging-Optimizers' 5 tuples, cycled), or custom (optim.ns_custom)"));
  t.push_back(bind("optim.ns_custom", SB_FIELD(optim.ns_custom), "custom coefficients a, b, c (used every step) or one triple per Newton–Schulz step; only with ns_coefficients=custom"));
  t.push_back(bind("optim.ns_eps", SB_FIELD(optim.ns_eps), "ε of the normalisation X = U / (‖U‖_F + ε)"));
  t.push_back(bind("optim.scale", SB_FIELD(optim.scale), "Muon update scale: shape √max(1, rows/cols); moonlight 0.2·√max(rows, cols); spectral = unit_rms √(rows/cols); max_dim √max(rows, cols); none"));
  t.push_back(bind("optim.momentum_warmup", SB_FIELD(optim.momentum_warmup), "steps over which Muon's μ rises linearly from momentum_warmup_start to momentum; 0 = off"));
  t.push_back(bind("optim.momentum_warmup_start", SB_FIELD(optim.momentum_warmup_start), "Muon's μ at step 0 when momentum_warmup > 0"));
  t.push_back(bind("optim.adam_lr", SB_FIELD(optim.adam_lr), "peak learning rate of the AdamW group under muon (unused under adamw, where lr applies)"));
  t.push_back(bind("optim.adam_betas", SB_FIELD(optim.adam_betas), "AdamW β1, β2"));
  t.push_back(bind("optim.adam_eps", SB_FIELD(optim.adam_eps), "AdamW ε"));
  t.push_back(bind("optim.clip", SB_FIELD(optim.clip), "clip the global gradient norm (exact) to this value; 0 = off"));
  t.push_back(bind("optim.extra_scale", SB_FIELD(optim.extra_scale), "Muon: a factor on the scale rule (Emerging-Optimizers' extra_scale_factor; 0.2 with scale=max_dim is Moonlight's rule)"));
  t.push_back(bind("optim.split_qkv", SB_FIELD(optim.split_qkv), "Muon: orthogonalise the Q, K and V blocks of each attn.qkv.w separately (Megatron-Core)"));
  t.push_back(bind("optim.cautious_wd", SB_FIELD(optim.cautious_wd), "Muon matrices: apply weight decay only where the update and the weight agree in sign (cautious weight decay, modded-nanogpt)"));
  t.push_back(bind("optim.normuon_beta2", SB_FIELD(optim.normuon_beta2), "normuon: EMA factor β2 of each row's mean square of the orthogonalised update"));
  t.push_back(bind("optim.qk_clip", SB_FIELD(optim.qk_clip), "QK-clip of MuonClip (Kimi K2): after each update, scale W_q and W_k of every head whose largest attention logit of the step exceeded τ by √(τ/max); 0 = off (CPU backend)"));
  // torch.optim.Muon's name for the scale rule: an alias that sets optim.scale.
  Option adjust = bind("optim.adjust_lr_fn", SB_FIELD(optim.scale), "alias of optim.scale in torch.optim.Muon's words: original = shape, match_rms_adamw = moonlight");
  adjust.value_name = "original|match_rms_adamw";
  adjust.set = [](Config& c, std::string_view text) {
    const std::string v = trim(text);
    if (v == "original") c.optim.scale = MuonScale::shape;
    else if (v == "match_rms_adamw") c.optim.scale = MuonScale::moonlight;
    else throw BadValue{"one of original, match_rms_adamw"};
  };
  adjust.default_note = "original (optim.scale=shape)";
  t.push_back(adjust);
  // [train]
  t.push_back(bind("train.steps", SB_FIELD(train.steps), "optimizer steps"));
  t.push_back(bind("train.seed", SB_FIELD(train.seed), "seed of the parameter initialisation"));
  t.push_back(bind("train.init", SB_FIELD(train.init), "start from the weights of this safetensors file (samebits export: samebits or Hugging Face GPT-2 names) or Hugging Face GPT-2 directory instead of the seeded initialisation; the experiment holds the file's content hash, not its path (docs/EXPORT.md); empty = none"));
  t.push_back(bind("train.init_digest", SB_FIELD(train.init_digest), "XXH3-64 of train.init's file, 16 hex digits: computed from the file when not given (run files record it); a file with another hash is refused"));
  t.push_back(bind("train.precision", SB_FIELD(train.precision), "fp32; bf16 compute with fp32 master weights; fp16 compute with fp32 master weights and a dynamic loss scale"));
  t.push_back(bind("train.schedule", SB_FIELD(train.schedule), "learning-rate schedule after the warmup: constant, cosine to min_lr_ratio, wsd (warmup-stable-decay), or adaptive (cosine times the AdaScale gain measured from the step's gradient noise, docs/TRAINING.md)"));
  t.push_back(bind("train.adaptive_beta", SB_FIELD(train.adaptive_beta), "adaptive: EMA factor β of the |G|² and tr(Σ) estimates behind the gain ρ = (B_noise + leaf_size)/(B_noise + batch)"));
  t.push_back(bind("train.warmup", SB_FIELD(train.warmup), "steps of linear warmup from 0 to the peak learning rate"));
  t.push_back(bind("train.decay_fraction", SB_FIELD(train.decay_fraction), "wsd: fraction of the steps, at the end, over which the lr decays to min_lr_ratio × peak"));
  t.push_back(bind("train.min_lr_ratio", SB_FIELD(train.min_lr_ratio), "cosine and wsd: final learning rate as a fraction of the peak"));
  t.push_back(bind("train.checkpoint_every", SB_FIELD(train.checkpoint_every), "steps between checkpoints (resume points); 0 = none"));
  t.push_back(bind("train.snapshot_steps", SB_FIELD(train.snapshot_steps), "steps after which all parameters are stored in full, ascending (e.g. 0, 100, 300); empty = none"));
  t.push_back(bind("train.keep_states", SB_FIELD(train.keep_states), "keep the full state (parameters, optimizer, data cursor) every N steps for good, for samebits verify --from; 0 = none"));
  t.push_back(bind("train.eval_every", SB_FIELD(train.eval_every), "steps between validation losses; 0 = no validation"));
  t.push_back(bind("train.eval_leaves", SB_FIELD(train.eval_leaves), "size of the fixed validation set, in leaves"));
  t.push_back(bind("train.loss_scale", SB_FIELD(train.loss_scale), "fp16: initial dynamic loss scale"));
  t.push_back(bind("train.loss_scale_growth_interval", SB_FIELD(train.loss_scale_growth_interval), "fp16: overflow-free steps before the scale grows"));
  t.push_back(bind("train.loss_scale_growth", SB_FIELD(train.loss_scale_growth), "fp16: factor by which the scale grows"));
  t.push_back(bind("train.loss_scale_backoff", SB_FIELD(train.loss_scale_backoff), "fp16: factor applied to the scale when gradients overflow (that step is skipped)"));
  // [perturb]
  t.push_back(bind("perturb.tensor", SB_FIELD(perturb.tensor), "the weight tensor to perturb, a name of the tensor table (e.g. h.0.attn.qkv.w; an unknown name is refused with the list of valid ones); empty = no perturbation"));
  t.push_back(bind("perturb.index", SB_FIELD(perturb.index), "flat (row-major) element index in that tensor, 0 … numel-1"));
  t.push_back(bind("perturb.ulps", SB_FIELD(perturb.ulps), "move the element this many representable fp32 values: up when positive, down when negative, through zero like the float line; non-zero"));
  t.push_back(bind("perturb.step", SB_FIELD(perturb.step), "apply it after this many steps, just before the forward pass of the next (0 = the initial weights); the first step that can differ is step + 1"));
  // [numerics]: mode presets the three switches; an explicit switch (applied after it) wins.
  Option mode = bind("numerics.mode", SB_FIELD(numerics.mode), "deterministic: the reproducibility contract; vendor: ordinary framework numerics. Presets gemm, reduce and allreduce; a switch given explicitly overrides it");
  mode.set = [](Config& c, std::string_view text) { c.numerics = numerics_preset(parse_enum<NumericsMode>(text)); };
  t.push_back(mode);
  t.push_back(bind("numerics.gemm", SB_FIELD(numerics.gemm), "matrix products: canonical ascending-k fma chains, or vendor BLAS (OpenBLAS, cuBLAS)"));
  t.back().default_note = "canonical (vendor under mode=vendor)";
  t.push_back(bind("numerics.reduce", SB_FIELD(numerics.reduce), "row and scalar reductions: canonical orders, or native float sums in thread order and atomics"));
  t.back().default_note = "canonical (native under mode=vendor)";
  t.push_back(bind("numerics.allreduce", SB_FIELD(numerics.allreduce), "gradient sum across ranks: exact fixed-point integers, or native float all-reduce"));
  t.back().default_note = "exact (native under mode=vendor)";
  // [run]
  t.push_back(bind("run.backend", SB_FIELD(run.backend), "where the kernels run"));
  t.push_back(bind("run.threads", SB_FIELD(run.threads), "CPU threads; 0 = all hardware threads"));
  t.push_back(bind("run.out", SB_FIELD(run.out), "the run file (HDF5); empty = runs/<experiment id>.h5"));
  t.push_back(bind("run.log_every", SB_FIELD(run.log_every), "steps between log lines"));
  t.push_back(bind("run.progress", SB_FIELD(run.progress), "progress bar: auto (when stderr is a terminal), on, or off (plain lines)"));
  return t;
}

const std::vector<Option>& registry() {
  static const std::vector<Option> table = build_registry();
  return table;
}

const Option* find_option(const std::string& key) {
  for (const auto& o : registry()) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean optim.lr?)" when a known key is close to `key`, else "".
std::string suggestion(const std::string& key, const std::string& prefix) {
  const std::string leaf = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
  const Option* best = nullptr;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const auto& o : registry()) {
    const std::string o_leaf = o.key.substr(o.key.find('.') + 1);
    const std::size_t d = std::min(edit_distance(key, o.key), o_leaf == leaf ? 1 : edit_distance(leaf, o_leaf) + 2);
    if (d < best_distance) {
      best = &o;
      best_distance = d;
    }
  }
  return best ? " (did you mean " + prefix + best->key + "?)" : "";
}

// Where a value came from, for messages.
struct Given {
  std::string value;
  std::string origin;  // "in FILE" or "on the command line"
};

// Collects key → value from one source; unknown and repeated keys are errors.
void collect(const po::parsed_options& parsed, const std::string& origin, bool command_line,
             std::map<std::string, Given>& out) {
  const std::string prefix = command_line ? "--" : "";
  std::map<std::string, bool> seen;
  for (const auto& opt : parsed.options) {
    if (opt.position_key >= 0) {
      SB_FAIL("unexpected argument '", opt.value.empty() ? "" : opt.value.front(), "' ", origin,
              "; options are written --section.key VALUE (samebits train --help lists them)");
    }
    if (opt.unregistered || find_option(opt.string_key) == nullptr) {
      SB_FAIL("unknown config key '", prefix, opt.string_key, "' ", origin, suggestion(opt.string_key, prefix),
              "; samebits train --help lists the options");
    }
    SB_CHECK(!seen[opt.string_key], "config key ", opt.string_key, " is given twice ", origin,
             "; keep one");
    seen[opt.string_key] = true;
    SB_CHECK(opt.value.size() == 1, "config key ", opt.string_key, " ", origin, " needs one value");
    SB_CHECK(!command_line || opt.value.front().rfind("--", 0) != 0, "config key --", opt.string_key,
             " has no value on the command line (it is followed by '", opt.value.front(), "')");
    out[opt.string_key] = Given{opt.value.front(), origin};
  }
}

po::options_description boost_description() {
  po::options_description desc;
  for (const auto& o : registry()) {
    desc.add_options()(o.key.c_str(), po::value<std::string>());
  }
  return desc;
}

void read_file(const std::string& path, const po::options_description& desc, std::map<std::string, Given>& values) {
  std::error_code ec;
  SB_CHECK(std::filesystem::exists(path, ec), "config file '", path, "' does not exist");
  SB_CHECK(std::filesystem::is_regular_file(path, ec), "config file '", path, "' is not a regular file");
  std::ifstream in(path);
  SB_CHECK(in.good(), "config file '", path, "' cannot be opened for reading (check its permissions)");
  po::parsed_options parsed(&desc);
  try {
    parsed = po::parse_config_file(in, desc, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    SB_FAIL("config file '", path, "': ", e.what());
  }
  collect(parsed, "in " + path, false, values);
}

void read_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                       std::map<std::string, Given>& values) {
  namespace style = po::command_line_style;
  po::parsed_options parsed(&desc);
  try {
    parsed = po::command_line_parser(args)
                 .options(desc)
                 .style(style::unix_style & ~style::allow_guessing & ~style::allow_short)
                 .allow_unregistered()
                 .run();
  } catch (const po::error& e) {
    SB_FAIL("command line: ", e.what());
  }
  collect(parsed, "on the command line", true, values);
}

// key → default text, read back from the resolved INI text of Config{}.
std::map<std::string, std::string> default_texts() {
  std::map<std::string, std::string> out;
  std::istringstream in(to_ini_text(Config{}));
  std::string line;
  std::string section;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const std::size_t eq = line.find('=');
    out[section + "." + trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

std::string wrap(const std::string& text, std::size_t indent, std::size_t width) {
  std::istringstream words(text);
  std::string out(indent, ' ');
  std::size_t column = indent;
  std::string word;
  bool first = true;
  while (words >> word) {
    if (!first && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      first = true;
    }
    if (!first) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  return out + "\n";
}

}  // namespace

std::vector<OptionInfo> option_table() {
  const auto defaults = default_texts();
  std::vector<OptionInfo> out;
  for (const auto& o : registry()) {
    const std::string default_text = o.default_note.empty() ? defaults.at(o.key) : o.default_note;
    out.push_back({o.key, o.value_name, default_text, o.help});
  }
  return out;
}

Config parse_config(const std::string& ini_path, const std::vector<std::string>& cli_overrides) {
  const po::options_description desc = boost_description();
  std::map<std::string, Given> from_file;
  std::map<std::string, Given> from_command_line;
  if (!ini_path.empty()) read_file(ini_path, desc, from_file);
  read_command_line(cli_overrides, desc, from_command_line);

  Config config;
  for (const auto& o : registry()) {  // registry order: numerics.mode before its switches
    const auto on_command_line = from_command_line.find(o.key);
    const auto in_file = from_file.find(o.key);
    const Given* given = on_command_line != from_command_line.end() ? &on_command_line->second
                         : in_file != from_file.end()                ? &in_file->second
                                                                     : nullptr;
    if (given == nullptr) continue;
    try {
      o.set(config, given->value);
    } catch (const BadValue& bad) {
      SB_FAIL("config ", o.key, "='", given->value, "' ", given->origin, " is not valid: expected ", bad.expected);
    }
  }
  // train.init enters the experiment by content: hash its file unless the digest is given at the
  // same level or above (a run file's recorded config carries both).
  const bool init_on_command_line = from_command_line.count("train.init") != 0;
  const bool digest_given = from_command_line.count("train.init_digest") != 0 ||
                            (!init_on_command_line && from_file.count("train.init_digest") != 0);
  if (!config.train.init.empty() && !digest_given) {
    try {
      config.train.init_digest = io::file_digest(io::init_weights_file(config.train.init));
    } catch (const Error& e) {
      SB_FAIL("config train.init='", config.train.init, "': ", e.what());
    }
  }
  validate(config);
  return config;
}

std::string options_help() {
  std::ostringstream out;
  out << "Configuration: an INI file ([section] then key = value; # starts a comment) and/or\n"
         "--section.key VALUE on the command line, which wins over the file. Lists are\n"
         "comma-separated; use --key=VALUE for values that start with '-'.\n";
  const auto table = option_table();
  for (const auto& section : kSections) {
    out << "\n[" << section.name << "]  " << section.title << "\n";
    for (const auto& o : table) {
      if (o.key.compare(0, std::string(section.name).size() + 1, std::string(section.name) + ".") != 0) continue;
      std::string head = "  --" + o.key + " " + o.value_name;
      const std::string default_text = o.default_text.empty() ? "(empty)" : o.default_text;
      head += head.size() < 44 ? std::string(44 - head.size(), ' ') : std::string(" ");
      out << head << "default " << default_text << "\n" << wrap(o.help, 6, 100);
    }
  }
  return out.str();
}

std::string options_markdown() {
  std::ostringstream out;
  const auto table = option_table();
  for (const auto& section : kSections) {
    out << "### [" << section.name << "] — " << section.title << "\n\n"
        << "| key | value | default | meaning |\n|---|---|---|---|\n";
    for (const auto& o : table) {
      if (o.key.compare(0, std::string(section.name).size() + 1, std::string(section.name) + ".") != 0) continue;
      std::string value_name = o.value_name;
      std::replace(value_name.begin(), value_name.end(), '|', '/');
      out << "| `" << o.key << "` | " << value_name << " | " << (o.default_text.empty() ? "(empty)" : "`" + o.default_text + "`")
          << " | " << o.help << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace sb::cli
