// Validation, resolved INI text and experiment id of sb::Config. Contract: to_ini_text is a pure
// function of the Config (the table's key order, shortest exact numbers; config_fields.hpp), and
// experiment_id hashes only experiment_text, so equal experiments get equal ids on every machine.
#include "samebits/core/config.hpp"

#include <xxhash.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "config_value.hpp"
#include "samebits/core/config_fields.hpp"
#include "samebits/core/pipe_group.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb {

NumericsConfig numerics_preset(NumericsMode mode) {
  if (mode == NumericsMode::vendor) {
    return {NumericsMode::vendor, GemmMode::vendor, ReduceMode::native, AllreduceMode::native, LeafSumMode::native};
  }
  return {NumericsMode::deterministic, GemmMode::canonical, ReduceMode::canonical, AllreduceMode::exact,
          LeafSumMode::exact};
}

bool is_deterministic(const NumericsConfig& n) {
  return n.gemm != GemmMode::vendor && n.reduce == ReduceMode::canonical && n.allreduce == AllreduceMode::exact &&
         n.leaf_sum == LeafSumMode::exact;
}

namespace {

using config_value::double_text;

// ---- validation ------------------------------------------------------------------------------

void require_at_least(const char* key, int64_t value, int64_t minimum, const char* what_to_do) {
  SB_CHECK(value >= minimum, "config ", key, "=", value, " must be at least ", minimum, "; ", what_to_do);
}

void require_positive(const char* key, double value, const char* what_to_do) {
  SB_CHECK(std::isfinite(value) && value > 0.0, "config ", key, "=", double_text(value),
           " must be a positive finite number; ", what_to_do);
}

void require_range(const char* key, double value, double lo, bool lo_open, double hi, bool hi_open,
                   const char* what_to_do) {
  const bool ok = std::isfinite(value) && (lo_open ? value > lo : value >= lo) && (hi_open ? value < hi : value <= hi);
  SB_CHECK(ok, "config ", key, "=", double_text(value), " must lie in ", lo_open ? "(" : "[", double_text(lo), ", ",
           double_text(hi), hi_open ? ")" : "]", "; ", what_to_do);
}

// Strings travel through INI files: '#' starts a comment and surrounding blanks are trimmed.
void require_ini_safe(const char* key, const std::string& value) {
  const bool blank_edge = !value.empty() && (std::isspace(static_cast<unsigned char>(value.front())) ||
                                             std::isspace(static_cast<unsigned char>(value.back())));
  SB_CHECK(value.find_first_of("#\n\r") == std::string::npos && !blank_edge, "config ", key, "='",
           escape_untrusted(value),
           "' contains '#', a line break or surrounding blanks, which INI files "
           "cannot keep; rename the file or directory");
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
    SB_CHECK(d.path.empty() && d.val_path.empty(), "config data.path='", escape_untrusted(d.path), "', data.val_path='",
             escape_untrusted(d.val_path),
             "': data.source=synthetic reads no file; "
             "remove them or set data.source to shards, text or hdf5");
  } else {
    SB_CHECK(!d.path.empty(), "config data.source=", config_name(d.source),
             " needs data.path (the file or glob to read)");
  }
  if (d.source == DataSource::text) {
    SB_CHECK(m.vocab >= 256, "config data.source=text reads bytes (token ids 0..255) but model.vocab=", m.vocab,
             "; set model.vocab to at least 256");
  }
  require_at_least("data.leaf_size", d.leaf_size, 1, "a leaf holds at least one sequence (default 1)");
  require_at_least("data.leaves", d.leaves, 1, "a step needs at least one leaf (default 8)");
}

void validate_optim(const OptimConfig& o) {
  require_positive("optim.lr", o.lr, "use a learning rate such as 0.02 (muon) or 3e-3 (adamw)");
  SB_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0,
           "config optim.weight_decay=", double_text(o.weight_decay), " must be zero or positive");
  require_range("optim.momentum", o.momentum, 0.0, false, 1.0, true, "Muon's momentum is usually 0.95");
  require_at_least("optim.ns_steps", o.ns_steps, 1, "Newton–Schulz needs at least one iteration (default 5)");
  SB_CHECK(o.ns_steps <= 100, "config optim.ns_steps=", o.ns_steps, " exceeds 100; 5 is usual");
  if (o.ns_coefficients == NsCoefficients::custom) {
    const std::size_t n = o.ns_custom.size();
    SB_CHECK(n == 3 || n == 3 * static_cast<std::size_t>(o.ns_steps), "config optim.ns_custom has ", n,
             " numbers but optim.ns_coefficients=custom needs 3 (a, b, c for every step) or 3 × "
             "optim.ns_steps = ",
             3 * o.ns_steps, " (one triple per step)");
    for (double c : o.ns_custom) {
      SB_CHECK(std::isfinite(c), "config optim.ns_custom holds a non-finite coefficient");
    }
  } else {
    SB_CHECK(o.ns_custom.empty(),
             "config optim.ns_custom is set but optim.ns_coefficients=", config_name(o.ns_coefficients),
             "; set optim.ns_coefficients=custom or remove ns_custom");
  }
  if (o.ns_coefficients == NsCoefficients::polar_express_8) {
    SB_CHECK(o.ns_steps >= 8, "config optim.ns_steps=", o.ns_steps,
             " is below the 8 triples of "
             "optim.ns_coefficients=polar_express_8 (Emerging-Optimizers' table); use ns_steps=8 or more");
  }
  if (o.ns_coefficients == NsCoefficients::quintic) {
    SB_CHECK(o.ns_steps % 5 == 0, "config optim.ns_steps=", o.ns_steps,
             " is not a multiple of the 5 "
             "triples of optim.ns_coefficients=quintic (cycled, as Emerging-Optimizers does); use 5 or 10");
  }
  require_positive("optim.ns_eps", o.ns_eps, "the Newton–Schulz normalisation epsilon is usually 1e-7");
  require_positive("optim.extra_scale", o.extra_scale,
                   "1 leaves the scale rule alone; 0.2 with scale=max_dim is Moonlight's");
  SB_CHECK(std::isfinite(o.qk_clip) && o.qk_clip >= 0.0, "config optim.qk_clip=", double_text(o.qk_clip),
           " must be zero (off) or a positive logit bound such as 100");
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
  SB_CHECK(std::isfinite(o.clip) && o.clip >= 0.0, "config optim.clip=", double_text(o.clip),
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
             "config train.warmup=", t.warmup, " plus train.decay_fraction=", double_text(t.decay_fraction),
             " of train.steps=", t.steps, " exceeds the run; shorten the warmup or the decay");
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
    SB_CHECK(s >= 0 && s <= t.steps, "config train.snapshot_steps holds ", s, ", outside [0, train.steps=", t.steps,
             "]");
    SB_CHECK(i == 0 || s > t.snapshot_steps[i - 1],
             "config train.snapshot_steps must be strictly "
             "ascending; ",
             s, " follows ", t.snapshot_steps[i == 0 ? 0 : i - 1]);
  }
  const bool digest_ok =
      t.init_digest.size() == 16 && t.init_digest.find_first_not_of("0123456789abcdef") == std::string::npos;
  SB_CHECK(t.init.empty() ? t.init_digest.empty() : digest_ok, "config train.init_digest='",
           escape_untrusted(t.init_digest), "' ",
           t.init.empty() ? "is given without train.init"
                          : "must be the 16 lowercase hex digits of the XXH3-64 of "
                            "train.init's file (leave it out: samebits computes it)");
  require_at_least("train.eval_every", t.eval_every, 0, "use 0 to turn validation off");
  require_at_least("train.eval_leaves", t.eval_leaves, 1, "the validation set needs at least one leaf");
  require_positive("train.loss_scale", t.loss_scale, "fp16 loss scaling usually starts at 65536");
  require_at_least("train.loss_scale_growth_interval", t.loss_scale_growth_interval, 1,
                   "grow the scale after N overflow-free steps, e.g. 1000");
  require_range("train.loss_scale_growth", t.loss_scale_growth, 1.0, true, 1e6, false, "the scale usually doubles (2)");
  require_range("train.loss_scale_backoff", t.loss_scale_backoff, 0.0, true, 1.0, true,
                "the scale usually halves on overflow (0.5)");
}

void validate_run(const RunConfig& r) {
  require_at_least("run.threads", r.threads, 0, "use 0 for all hardware threads");
  require_ini_safe("run.out", r.out);
  require_at_least("run.log_every", r.log_every, 1, "log every N steps, e.g. 10");
}

// ---- INI text --------------------------------------------------------------------------------

// The fields of the table in its order, each section under its header: every field
// (experiment_only false) or the fields the experiment rules include for `c`.
std::string ini_text(const Config& c, bool experiment_only) {
  std::string text;
  std::string_view section;
  for (const ConfigField& f : config_fields()) {
    if (f.is_alias() || (experiment_only && !f.experiment.includes(c))) continue;
    if (f.section() != section) {
      section = f.section();
      if (!text.empty()) text += '\n';
      text += '[';
      text += section;
      text += "]\n";
    }
    const std::string value = f.text(c);
    text += f.name();
    text += value.empty() ? " =\n" : " = " + value + "\n";
  }
  return text;
}

// Expert parallelism's rules that need no world size (the plan checks the data-parallel size).
void validate_ep(const Config& config) {
  const int64_t ep = config.parallel.ep;
  SB_CHECK(ep >= 1 && ep <= 4096, "config parallel.ep=", ep, " must be between 1 and 4096");
  if (ep == 1) return;
  const GPTConfig& m = config.model;
  SB_CHECK(m.moe_experts > 0, "config parallel.ep=", ep,
           " splits the routed experts of MoE blocks, but model.moe_experts=0; set model.moe_experts or parallel.ep=1");
  SB_CHECK(m.moe_experts % ep == 0, "config parallel.ep=", ep, " does not divide model.moe_experts=", m.moe_experts,
           ": every rank of an expert-parallel group holds the same number of experts");
  SB_CHECK(config.numerics.allreduce == AllreduceMode::exact, "config parallel.ep=", ep,
           " with numerics.allreduce=native is not supported (the shared tensors' sum over the expert-parallel "
           "group is of integer words)");
  SB_CHECK(config.run.backend == Device::cpu, "config parallel.ep=", ep,
           " runs on CPU ranks (run.backend=cpu); expert parallelism over CUDA ranks is not built yet");
}

}  // namespace

void validate(const Config& config) {
  validate_model(config.model);
  validate_data(config.data, config.model);
  SB_CHECK(config.train.schedule != Schedule::adaptive || config.data.leaves >= 2,
           "config train.schedule=adaptive measures the gradient noise from the step's leaves, but "
           "data.leaves=",
           config.data.leaves, "; use at least 2 leaves");
  validate_optim(config.optim);
  SB_CHECK(!config.optim.split_qkv || !config.optim.muon_family() || !config.model.gqa(),
           "config optim.split_qkv orthogonalises the three equal blocks of attn.qkv.w, but model.n_kv_head=",
           config.model.n_kv_head,
           " makes the key and value blocks narrower than the query block; remove "
           "optim.split_qkv or model.n_kv_head");
  SB_CHECK(config.optim.qk_clip == 0.0 || (!config.model.gqa() && !config.model.qk_norm),
           "config optim.qk_clip bounds each head's q·k logit by scaling its own query and key rows, but ",
           config.model.qk_norm ? "model.qk_norm=true normalises those heads" : "model.n_kv_head shares a key head",
           "; remove optim.qk_clip");
  validate_train(config.train);
  validate_perturbation(config.perturb, config.model, config.train.steps);
  validate_run(config.run);
  validate_tp(config.model, config.parallel.tp);
  SB_CHECK(config.numerics.gemm != GemmMode::exact || config.parallel.tp == 1 || config.run.backend == Device::cpu,
           "config numerics.gemm=exact with parallel.tp=", config.parallel.tp,
           " sums the ranks' integer dots on run.backend=cpu only (got run.backend=", config_name(config.run.backend),
           "); use numerics.gemm=canonical there");
  validate_pp(config.model, config.parallel.pp);
  validate_ep(config);
  SB_CHECK(config.numerics.leaf_sum == LeafSumMode::exact || config.numerics.allreduce == AllreduceMode::native,
           "config numerics.leaf_sum=native needs numerics.allreduce=native (the exact all-reduce sums each "
           "rank's exact leaf sums); set numerics.allreduce=native or numerics.leaf_sum=exact");
  SB_CHECK(config.numerics.bf16_dot == Bf16Dot::chain ||
               (config.train.precision == Precision::bf16 && config.numerics.gemm == GemmMode::canonical),
           "config numerics.bf16_dot=pairs orders bf16 matrix products, but train.precision=",
           config_name(config.train.precision), " and numerics.gemm=", config_name(config.numerics.gemm),
           "; use it with train.precision=bf16 and numerics.gemm=canonical, or set numerics.bf16_dot=chain");
}

std::string to_ini_text(const Config& config) { return ini_text(config, false); }

std::string experiment_text(const Config& config) { return "# samebits experiment v1\n" + ini_text(config, true); }

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
  const uint64_t run_sequences = uint64_t(config.train.steps) * uint64_t(d.leaves) * uint64_t(d.leaf_size);
  return {d.order_seed, run_sequences};
}

Numerics to_numerics(const Config& config) {
  return {config.numerics.gemm, config.numerics.reduce, config.train.precision, config.numerics.bf16_dot};
}

}  // namespace sb
