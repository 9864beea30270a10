// Validation, resolved INI text and experiment id of sb::Config. Contract: to_ini_text is a pure
// function of the Config (fixed key order, shortest exact numbers), and experiment_id hashes only
// experiment_text, so equal experiments get equal ids on every machine.
#include "samebits/core/config.hpp"

#include <xxhash.h>

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "samebits/core/train/perturbation.hpp"
#include "samebits/det/error.hpp"

namespace sb {

NumericsConfig numerics_preset(NumericsMode mode) {
  if (mode == NumericsMode::vendor) {
    return {NumericsMode::vendor, GemmMode::vendor, ReduceMode::native, AllreduceMode::native};
  }
  return {NumericsMode::deterministic, GemmMode::canonical, ReduceMode::canonical, AllreduceMode::exact};
}

bool is_deterministic(const NumericsConfig& n) {
  return n.gemm == GemmMode::canonical && n.reduce == ReduceMode::canonical &&
         n.allreduce == AllreduceMode::exact;
}

namespace {

// Shortest decimal text that parses back to exactly `value` (std::to_chars).
std::string format_config_double(double value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

// ---- validation ------------------------------------------------------------------------------

void require_at_least(const char* key, int64_t value, int64_t minimum, const char* what_to_do) {
  SB_CHECK(value >= minimum, "config ", key, "=", value, " must be at least ", minimum, "; ", what_to_do);
}

void require_positive(const char* key, double value, const char* what_to_do) {
  SB_CHECK(std::isfinite(value) && value > 0.0, "config ", key, "=", format_config_double(value),
           " must be a positive finite number; ", what_to_do);
}

void require_range(const char* key, double value, double lo, bool lo_open, double hi, bool hi_open,
                   const char* what_to_do) {
  const bool ok = std::isfinite(value) && (lo_open ? value > lo : value >= lo) &&
                  (hi_open ? value < hi : value <= hi);
  SB_CHECK(ok, "config ", key, "=", format_config_double(value), " must lie in ", lo_open ? "(" : "[",
           format_config_double(lo), ", ", format_config_double(hi), hi_open ? ")" : "]", "; ",
           what_to_do);
}

// Strings travel through INI files: '#' starts a comment and surrounding blanks are trimmed.
void require_ini_safe(const char* key, const std::string& value) {
  const bool blank_edge = !value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                                              std::isspace(static_cast<unsigned char>(value.back())));
  SB_CHECK(value.find_first_of("#\n\r") == std::string::npos && !blank_edge, "config ", key, "='",
           value, "' contains '#', a line break or surrounding blanks, which INI files cannot keep; "
           "rename the file or directory");
}

void validate_model(const GPTConfig& m) {
  require_at_least("model.vocab", m.vocab, 2, "a language needs at least two tokens (default 256)");
  require_at_least("model.seq_len", m.seq_len, 1, "use the context length in tokens (default 128)");
  require_at_least("model.n_layer", m.n_layer, 1, "use at least one transformer block (default 4)");
  require_at_least("model.n_head", m.n_head, 1, "use at least one attention head (default 4)");
  require_at_least("model.n_embd", m.n_embd, 1, "use the model width (default 128)");
  if (m.n_embd % m.n_head != 0) {
    const int lower = m.n_embd / m.n_head * m.n_head;
    std::ostringstream hint;
    if (lower > 0) hint << lower << " or ";
    hint << lower + m.n_head;
    SB_FAIL("config model.n_embd=", m.n_embd, " is not divisible by model.n_head=", m.n_head,
            "; choose n_embd as a multiple of n_head (e.g. ", hint.str(), ")");
  }
  m.validate();  // the model's own rules (the same today); it owns any it adds
}

void validate_data(const DataConfig& d, const GPTConfig& m) {
  require_ini_safe("data.path", d.path);
  require_ini_safe("data.val_path", d.val_path);
  if (d.source == DataSource::synthetic) {
    SB_CHECK(d.path.empty() && d.val_path.empty(), "config data.path='", d.path, "', data.val_path='",
             d.val_path, "': data.source=synthetic reads no file; remove them or set data.source "
             "to shards, text or hdf5");
  } else {
    SB_CHECK(!d.path.empty(), "config data.source=", config_name(d.source),
             " needs data.path (the file or glob to read)");
  }
  if (d.source == DataSource::text) {
    SB_CHECK(m.vocab >= 256, "config data.source=text reads bytes (token ids 0..255) but model.vocab=",
             m.vocab, "; set model.vocab to at least 256");
  }
  require_at_least("data.leaf_size", d.leaf_size, 1, "a leaf holds at least one sequence (default 1)");
  require_at_least("data.leaves", d.leaves, 1, "a step needs at least one leaf (default 8)");
}

void validate_optim(const OptimConfig& o) {
  require_positive("optim.lr", o.lr, "use a learning rate such as 0.02 (muon) or 3e-3 (adamw)");
  SB_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, "config optim.weight_decay=",
           format_config_double(o.weight_decay), " must be zero or positive");
  require_range("optim.momentum", o.momentum, 0.0, false, 1.0, true, "Muon's momentum is usually 0.95");
  require_at_least("optim.ns_steps", o.ns_steps, 1, "Newton–Schulz needs at least one iteration (default 5)");
  SB_CHECK(o.ns_steps <= 100, "config optim.ns_steps=", o.ns_steps, " exceeds 100; 5 is usual");
  if (o.ns_coefficients == NsCoefficients::custom) {
    const std::size_t n = o.ns_custom.size();
    SB_CHECK(n == 3 || n == 3 * static_cast<std::size_t>(o.ns_steps), "config optim.ns_custom has ", n,
             " numbers but optim.ns_coefficients=custom needs 3 (a, b, c for every step) or 3 × "
             "optim.ns_steps = ", 3 * o.ns_steps, " (one triple per step)");
    for (double c : o.ns_custom) {
      SB_CHECK(std::isfinite(c), "config optim.ns_custom holds a non-finite coefficient");
    }
  } else {
    SB_CHECK(o.ns_custom.empty(), "config optim.ns_custom is set but optim.ns_coefficients=",
             config_name(o.ns_coefficients), "; set optim.ns_coefficients=custom or remove ns_custom");
  }
  if (o.ns_coefficients == NsCoefficients::polar_express_8) {
    SB_CHECK(o.ns_steps >= 8, "config optim.ns_steps=", o.ns_steps, " is below the 8 triples of "
             "optim.ns_coefficients=polar_express_8 (Emerging-Optimizers' table); use ns_steps=8 or more");
  }
  if (o.ns_coefficients == NsCoefficients::quintic) {
    SB_CHECK(o.ns_steps % 5 == 0, "config optim.ns_steps=", o.ns_steps, " is not a multiple of the 5 "
             "triples of optim.ns_coefficients=quintic (cycled, as Emerging-Optimizers does); use 5 or 10");
  }
  require_positive("optim.ns_eps", o.ns_eps, "the Newton–Schulz normalisation epsilon is usually 1e-7");
  require_positive("optim.extra_scale", o.extra_scale, "1 leaves the scale rule alone; 0.2 with scale=max_dim is Moonlight's");
  SB_CHECK(std::isfinite(o.qk_clip) && o.qk_clip >= 0.0, "config optim.qk_clip=",
           format_config_double(o.qk_clip), " must be zero (off) or a positive logit bound such as 100");
  require_range("optim.normuon_beta2", o.normuon_beta2, 0.0, false, 1.0, true, "NorMuon's β2 is usually 0.95");
  require_at_least("optim.momentum_warmup", o.momentum_warmup, 0, "use 0 to turn the warmup off");
  if (o.momentum_warmup > 0) {
    require_range("optim.momentum_warmup_start", o.momentum_warmup_start, 0.0, false, o.momentum, false,
                  "the warmup starts at or below optim.momentum");
  }
  require_positive("optim.adam_lr", o.adam_lr, "use a learning rate such as 3e-3");
  require_range("optim.adam_betas[0]", o.adam_betas[0], 0.0, false, 1.0, true, "usual betas are 0.9, 0.95");
  require_range("optim.adam_betas[1]", o.adam_betas[1], 0.0, false, 1.0, true, "usual betas are 0.9, 0.95");
  require_positive("optim.adam_eps", o.adam_eps, "AdamW's epsilon is usually 1e-8");
  SB_CHECK(std::isfinite(o.clip) && o.clip >= 0.0, "config optim.clip=", format_config_double(o.clip),
           " must be zero (off) or a positive gradient-norm limit such as 1");
}

void validate_train(const TrainConfig& t) {
  require_at_least("train.steps", t.steps, 1, "train for at least one step");
  SB_CHECK(t.warmup >= 0 && t.warmup <= t.steps, "config train.warmup=", t.warmup,
           " must lie in [0, train.steps=", t.steps, "]");
  if (t.schedule == Schedule::wsd) {
    require_range("train.decay_fraction", t.decay_fraction, 0.0, true, 1.0, false,
                  "wsd decays over the last fraction of the steps, e.g. 0.2");
    const double decay_steps = t.decay_fraction * static_cast<double>(t.steps);
    SB_CHECK(static_cast<double>(t.warmup) + decay_steps <= static_cast<double>(t.steps),
             "config train.warmup=", t.warmup, " plus train.decay_fraction=",
             format_config_double(t.decay_fraction), " of train.steps=", t.steps,
             " exceeds the run; shorten the warmup or the decay");
  }
  if (t.schedule == Schedule::adaptive) {
    require_range("train.adaptive_beta", t.adaptive_beta, 0.0, false, 1.0, true,
                  "the EMA factor of the noise estimates, e.g. 0.9");
  }
  require_range("train.min_lr_ratio", t.min_lr_ratio, 0.0, false, 1.0, false,
                "the final lr is min_lr_ratio × peak, e.g. 0.1");
  require_at_least("train.checkpoint_every", t.checkpoint_every, 0, "use 0 for no periodic checkpoint");
  require_at_least("train.keep_states", t.keep_states, 0, "use 0 to keep no state beyond the last checkpoints");
  for (std::size_t i = 0; i < t.snapshot_steps.size(); ++i) {
    const int64_t s = t.snapshot_steps[i];
    SB_CHECK(s >= 0 && s <= t.steps, "config train.snapshot_steps holds ", s,
             ", outside [0, train.steps=", t.steps, "]");
    SB_CHECK(i == 0 || s > t.snapshot_steps[i - 1], "config train.snapshot_steps must be strictly "
             "ascending; ", s, " follows ", t.snapshot_steps[i == 0 ? 0 : i - 1]);
  }
  const bool digest_ok = t.init_digest.size() == 16 &&
                         t.init_digest.find_first_not_of("0123456789abcdef") == std::string::npos;
  SB_CHECK(t.init.empty() ? t.init_digest.empty() : digest_ok, "config train.init_digest='", t.init_digest, "' ",
           t.init.empty() ? "is given without train.init" : "must be the 16 lowercase hex digits of the XXH3-64 of "
           "train.init's file (leave it out: samebits computes it)");
  require_at_least("train.eval_every", t.eval_every, 0, "use 0 to turn validation off");
  require_at_least("train.eval_leaves", t.eval_leaves, 1, "the validation set needs at least one leaf");
  require_positive("train.loss_scale", t.loss_scale, "fp16 loss scaling usually starts at 65536");
  require_at_least("train.loss_scale_growth_interval", t.loss_scale_growth_interval, 1,
                   "grow the scale after N overflow-free steps, e.g. 1000");
  require_range("train.loss_scale_growth", t.loss_scale_growth, 1.0, true, 1e6, false,
                "the scale usually doubles (2)");
  require_range("train.loss_scale_backoff", t.loss_scale_backoff, 0.0, true, 1.0, true,
                "the scale usually halves on overflow (0.5)");
}

void validate_run(const RunConfig& r) {
  require_at_least("run.threads", r.threads, 0, "use 0 for all hardware threads");
  require_ini_safe("run.out", r.out);
  require_at_least("run.log_every", r.log_every, 1, "log every N steps, e.g. 10");
}

// ---- INI text --------------------------------------------------------------------------------

class IniWriter {
 public:
  void section(const char* name) {
    if (!text_.empty()) text_ += '\n';
    text_ += '[';
    text_ += name;
    text_ += "]\n";
  }
  void put(const char* key, const std::string& value) {
    text_ += key;
    text_ += value.empty() ? " =\n" : " = " + value + "\n";
  }
  void put(const char* key, int64_t v) { put(key, std::to_string(v)); }
  void put(const char* key, int v) { put(key, std::to_string(v)); }
  void put(const char* key, uint64_t v) { put(key, std::to_string(v)); }
  void put(const char* key, bool v) { put(key, std::string(v ? "true" : "false")); }
  void put(const char* key, double v) { put(key, format_config_double(v)); }
  template <class E>
  void put_enum(const char* key, E v) { put(key, std::string(config_name(v))); }
  template <class T, class Format>
  void put_list(const char* key, const T& values, Format format) {
    std::string joined;
    for (const auto& v : values) {
      if (!joined.empty()) joined += ", ";
      joined += format(v);
    }
    put(key, joined);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Which keys to write: everything (to_ini_text) or only what can change the numbers.
enum class Keys { all, experiment };

std::string ini_text(const Config& c, Keys keys) {
  const bool all = keys == Keys::all;
  const auto fmt_double = [](double v) { return format_config_double(v); };
  const auto fmt_int = [](int64_t v) { return std::to_string(v); };
  IniWriter w;
  w.section("model");
  w.put("vocab", c.model.vocab);
  w.put("seq_len", c.model.seq_len);
  w.put("n_layer", c.model.n_layer);
  w.put("n_head", c.model.n_head);
  w.put("n_embd", c.model.n_embd);
  w.put_enum("norm", c.model.norm);
  w.put("tied_head", c.model.tied_head);
  w.put("bias", c.model.bias);

  const DataConfig& d = c.data;
  const bool synthetic = d.source == DataSource::synthetic;
  w.section("data");
  w.put_enum("source", d.source);
  w.put("path", d.path);
  if (all || !synthetic) w.put("val_path", d.val_path);
  w.put("seed", d.seed);
  if (all || d.order_seed != 0) w.put("order_seed", d.order_seed);
  w.put("leaf_size", d.leaf_size);
  w.put("leaves", d.leaves);
  if (all || synthetic) {
    w.put("doc_len", d.synthetic.doc_len);
    w.put("mix_markov", d.synthetic.mix_markov);
    w.put("mix_grammar", d.synthetic.mix_grammar);
    w.put("mix_mark", d.synthetic.mix_mark);
    w.put("mix_recall", d.synthetic.mix_recall);
    w.put("markov_run", d.synthetic.markov_run);
    w.put("span_min", d.synthetic.span_min);
    w.put("span_max", d.synthetic.span_max);
    w.put("max_depth", d.synthetic.max_depth);
  }

  const OptimConfig& o = c.optim;
  const bool muon = all || o.muon_family();
  w.section("optim");
  w.put_enum("name", o.name);
  w.put("lr", o.lr);
  w.put("weight_decay", o.weight_decay);
  if (muon) {
    w.put("momentum", o.momentum);
    w.put("nesterov", o.nesterov);
    w.put("ns_steps", o.ns_steps);
    w.put_enum("ns_coefficients", o.ns_coefficients);
    w.put_list("ns_custom", o.ns_custom, fmt_double);
    w.put("ns_eps", o.ns_eps);
    w.put_enum("scale", o.scale);
    w.put("momentum_warmup", o.momentum_warmup);
    if (all || o.momentum_warmup > 0) w.put("momentum_warmup_start", o.momentum_warmup_start);
    w.put("adam_lr", o.adam_lr);
    // The variants' keys only when set, so experiments without them keep their ids.
    if (all || o.extra_scale != 1.0) w.put("extra_scale", o.extra_scale);
    if (all || o.split_qkv) w.put("split_qkv", o.split_qkv);
    if (all || o.cautious_wd) w.put("cautious_wd", o.cautious_wd);
    if (all || o.name == OptimizerName::normuon) w.put("normuon_beta2", o.normuon_beta2);
  }
  w.put_list("adam_betas", o.adam_betas, fmt_double);
  w.put("adam_eps", o.adam_eps);
  w.put("clip", o.clip);
  if (all || o.qk_clip > 0.0) w.put("qk_clip", o.qk_clip);

  const TrainConfig& t = c.train;
  w.section("train");
  w.put("steps", t.steps);
  w.put("seed", t.seed);
  if (all) w.put("init", t.init);
  if (all || !t.init.empty()) w.put("init_digest", t.init_digest);
  w.put_enum("precision", t.precision);
  w.put_enum("schedule", t.schedule);
  w.put("warmup", t.warmup);
  if (all || t.schedule == Schedule::wsd) w.put("decay_fraction", t.decay_fraction);
  if (all || t.schedule != Schedule::constant) w.put("min_lr_ratio", t.min_lr_ratio);
  if (all || t.schedule == Schedule::adaptive) w.put("adaptive_beta", t.adaptive_beta);
  if (all) {
    w.put("checkpoint_every", t.checkpoint_every);
    w.put_list("snapshot_steps", t.snapshot_steps, fmt_int);
    w.put("keep_states", t.keep_states);
  }
  w.put("eval_every", t.eval_every);
  w.put("eval_leaves", t.eval_leaves);
  if (all || t.precision == Precision::fp16) {
    w.put("loss_scale", t.loss_scale);
    w.put("loss_scale_growth_interval", t.loss_scale_growth_interval);
    w.put("loss_scale_growth", t.loss_scale_growth);
    w.put("loss_scale_backoff", t.loss_scale_backoff);
  }

  if (all || c.perturb.enabled()) {
    w.section("perturb");
    w.put("tensor", c.perturb.tensor);
    w.put("index", c.perturb.index);
    w.put("ulps", c.perturb.ulps);
    w.put("step", c.perturb.step);
  }

  w.section("numerics");
  if (all) w.put_enum("mode", c.numerics.mode);
  w.put_enum("gemm", c.numerics.gemm);
  w.put_enum("reduce", c.numerics.reduce);
  w.put_enum("allreduce", c.numerics.allreduce);

  if (all) {
    w.section("run");
    w.put_enum("backend", c.run.backend);
    w.put("threads", c.run.threads);
    w.put("out", c.run.out);
    w.put("log_every", c.run.log_every);
    w.put_enum("progress", c.run.progress);
  }
  return w.text();
}

}  // namespace

void validate(const Config& config) {
  validate_model(config.model);
  validate_data(config.data, config.model);
  SB_CHECK(config.train.schedule != Schedule::adaptive || config.data.leaves >= 2,
           "config train.schedule=adaptive measures the gradient noise from the step's leaves, but "
           "data.leaves=", config.data.leaves, "; use at least 2 leaves");
  validate_optim(config.optim);
  validate_train(config.train);
  validate_perturbation(config.perturb, config.model, config.train.steps);
  validate_run(config.run);
}

std::string to_ini_text(const Config& config) { return ini_text(config, Keys::all); }

std::string experiment_text(const Config& config) {
  return "# samebits experiment v1\n" + ini_text(config, Keys::experiment);
}

std::string experiment_id(const Config& config) {
  const std::string text = experiment_text(config);
  const XXH64_hash_t hash = XXH3_64bits(text.data(), text.size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, static_cast<uint64_t>(hash));
  return buf;
}

std::string run_path(const Config& config) {
  return config.run.out.empty() ? "runs/" + experiment_id(config) + ".h5" : config.run.out;
}

bool operator==(const Config& a, const Config& b) { return to_ini_text(a) == to_ini_text(b); }

data::DataConfig to_data_config(const Config& config) {
  data::DataConfig out;
  out.source = std::string(config_name(config.data.source));
  out.path = config.data.path;
  out.val_path = config.data.val_path;
  out.seed = config.data.seed;
  out.vocab = config.model.vocab;
  out.synthetic = config.data.synthetic;
  return out;
}

data::SampleOrder sample_order(const Config& config) {
  const DataConfig& d = config.data;
  if (d.order_seed == 0) return {d.seed, 0};
  const uint64_t run_sequences =
      uint64_t(config.train.steps) * uint64_t(d.leaves) * uint64_t(d.leaf_size);
  return {d.order_seed, run_sequences};
}

Numerics to_numerics(const Config& config) {
  return {config.numerics.gemm, config.numerics.reduce, config.train.precision};
}

}  // namespace sb
