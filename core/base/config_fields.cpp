// The rows of the configuration table (config_fields.hpp): one per key, in to_ini_text's order.
// Contract: the rows' order and experiment rules are recorded values. They decide byte for byte
// what to_ini_text and experiment_text write (tests/unit/test_config_text.cpp holds both texts);
// a new key goes where it belongs in its section, and one that joins the experiment is written
// only away from its default (a `when` rule) so that existing experiments keep their ids.
#include "samebits/core/config_fields.hpp"

#include <type_traits>
#include <utility>

#include "config_value.hpp"

namespace sb {
namespace {

using Rule = ExperimentRule;

constexpr Rule when(std::string_view condition, bool (*holds)(const Config&)) {
  return {Rule::Kind::when, condition, holds};
}

// ---- who belongs to the experiment -------------------------------------------------------------

constexpr Rule yes{};
constexpr Rule no{Rule::Kind::never, {}, nullptr};
constexpr Rule file_source =
    when("data.source is not synthetic", [](const Config& c) { return c.data.source != DataSource::synthetic; });
constexpr Rule synthetic =
    when("data.source is synthetic", [](const Config& c) { return c.data.source == DataSource::synthetic; });
constexpr Rule swiglu = when("model.mlp is swiglu", [](const Config& c) { return c.model.mlp == MlpKind::swiglu; });
constexpr Rule ffn_dim = when("model.ffn_dim is not 0", [](const Config& c) { return c.model.ffn_dim != 0; });
constexpr Rule rope = when("model.pos is rope", [](const Config& c) { return c.model.pos == PosKind::rope; });
constexpr Rule gqa = when("model.n_kv_head is not 0", [](const Config& c) { return c.model.n_kv_head != 0; });
constexpr Rule qk_norm = when("model.qk_norm is true", [](const Config& c) { return c.model.qk_norm; });
constexpr Rule moe = when("model.moe_experts is not 0", [](const Config& c) { return c.model.moe_experts != 0; });
constexpr Rule reordered = when("data.order_seed is not 0", [](const Config& c) { return c.data.order_seed != 0; });
constexpr Rule muon = when("optim.name is muon or normuon", [](const Config& c) { return c.optim.muon_family(); });
constexpr Rule momentum_warmup =
    when("optim.name is muon or normuon and optim.momentum_warmup > 0",
         [](const Config& c) { return c.optim.muon_family() && c.optim.momentum_warmup > 0; });
constexpr Rule extra_scale = when("optim.name is muon or normuon and optim.extra_scale is not 1",
                                  [](const Config& c) { return c.optim.muon_family() && c.optim.extra_scale != 1.0; });
constexpr Rule lerp_momentum =
    when("optim.name is muon or normuon and optim.momentum_form is lerp",
         [](const Config& c) { return c.optim.muon_family() && c.optim.momentum_form == MomentumForm::lerp; });
constexpr Rule split_qkv = when("optim.name is muon or normuon and optim.split_qkv is true",
                                [](const Config& c) { return c.optim.muon_family() && c.optim.split_qkv; });
constexpr Rule cautious_wd = when("optim.name is muon or normuon and optim.cautious_wd is true",
                                  [](const Config& c) { return c.optim.muon_family() && c.optim.cautious_wd; });
constexpr Rule normuon =
    when("optim.name is normuon", [](const Config& c) { return c.optim.name == OptimizerName::normuon; });
constexpr Rule qk_clip = when("optim.qk_clip > 0", [](const Config& c) { return c.optim.qk_clip > 0.0; });
constexpr Rule tp_shortcut =
    when("optim.tp_mode is not duplicated", [](const Config& c) { return c.optim.tp_mode != TpMode::duplicated; });
constexpr Rule init = when("train.init is set", [](const Config& c) { return !c.train.init.empty(); });
constexpr Rule wsd = when("train.schedule is wsd", [](const Config& c) { return c.train.schedule == Schedule::wsd; });
constexpr Rule decaying =
    when("train.schedule is not constant", [](const Config& c) { return c.train.schedule != Schedule::constant; });
constexpr Rule adaptive =
    when("train.schedule is adaptive", [](const Config& c) { return c.train.schedule == Schedule::adaptive; });
constexpr Rule fp16 =
    when("train.precision is fp16", [](const Config& c) { return c.train.precision == Precision::fp16; });
constexpr Rule perturbed = when("perturb.tensor is set", [](const Config& c) { return c.perturb.enabled(); });
constexpr Rule bf16_pairs =
    when("numerics.bf16_dot is pairs", [](const Config& c) { return c.numerics.bf16_dot == Bf16Dot::pairs; });
constexpr Rule native_leaf_sum =
    when("numerics.leaf_sum is native", [](const Config& c) { return c.numerics.leaf_sum == LeafSumMode::native; });

// ---- row builders -------------------------------------------------------------------------------

// The member `access(config)` returns, read and written as its type's INI text.
template <class Access>
ConfigField field(std::string key, Access access, Rule experiment, std::string help) {
  using T = std::remove_cvref_t<decltype(access(std::declval<Config&>()))>;
  ConfigField f;
  f.key = std::move(key);
  f.value_name = config_value::value_name<T>();
  f.help = std::move(help);
  f.experiment = experiment;
  f.text = [access](const Config& c) { return config_value::text<T>(access(c)); };
  f.set = [access](Config& c, std::string_view text) { config_value::parse<T>(text, access(c)); };
  return f;
}

// `f` with `note` shown as its default.
ConfigField noted(ConfigField f, std::string note) {
  f.default_note = std::move(note);
  return f;
}

// numerics.mode: setting it sets the switches to its preset.
ConfigField preset(ConfigField f) {
  f.set = [](Config& c, std::string_view text) {
    c.numerics = numerics_preset(config_value::parse_enum<NumericsMode>(text));
  };
  return f;
}

ConfigField alias(std::string key, std::string alias_of, std::string value_name, std::string note, std::string help,
                  std::function<void(Config&, std::string_view)> set) {
  ConfigField f;
  f.key = std::move(key);
  f.alias_of = std::move(alias_of);
  f.value_name = std::move(value_name);
  f.help = std::move(help);
  f.experiment = no;
  f.default_note = std::move(note);
  f.set = std::move(set);
  return f;
}

// config.SECTION.MEMBER, for field(). `path` is a member path (model.n_embd), which parentheses
// would break.
#define SB_MEMBER(path) \
  [](auto& c) -> auto& { return c.path; }  // NOLINT(bugprone-macro-parentheses)

std::vector<ConfigField> build_fields() {
  return {
      // [model]
      field("model.vocab", SB_MEMBER(model.vocab), yes,
            "vocabulary size; token ids are 0 … vocab-1 (at least 256 for text data)"),
      field("model.seq_len", SB_MEMBER(model.seq_len), yes, "tokens per sequence (the context length)"),
      field("model.n_layer", SB_MEMBER(model.n_layer), yes, "number of transformer blocks"),
      field("model.n_head", SB_MEMBER(model.n_head), yes, "attention heads per block; n_embd must be a multiple of it"),
      field("model.n_embd", SB_MEMBER(model.n_embd), yes, "model width (embedding dimension)"),
      field("model.norm", SB_MEMBER(model.norm), yes, "normalisation of the pre-norm blocks and the final norm"),
      field("model.tied_head", SB_MEMBER(model.tied_head), yes, "the LM head reuses the token embedding matrix"),
      field("model.bias", SB_MEMBER(model.bias), yes, "biases in the linear layers and the norms"),
      field("model.mlp", SB_MEMBER(model.mlp), swiglu,
            "the blocks' MLP: gelu (GPT-2's) or swiglu (Llama's: silu(gate)·up, mlp.fc.w holding both halves)"),
      field("model.ffn_dim", SB_MEMBER(model.ffn_dim), ffn_dim, "the MLP's hidden width F; 0: 4·model.n_embd"),
      field("model.pos", SB_MEMBER(model.pos), rope,
            "positions: learned (GPT-2's wpe table) or rope (rotary positions on q and k, Llama's rotate-half layout)"),
      field("model.rope_theta", SB_MEMBER(model.rope_theta), rope, "rotary positions' base θ (model.pos = rope)"),
      field("model.n_kv_head", SB_MEMBER(model.n_kv_head), gqa,
            "key/value heads (grouped-query attention), dividing n_head; 0: one per query head"),
      field("model.qk_norm", SB_MEMBER(model.qk_norm), qk_norm,
            "RMSNorm with a learned gain on each query and key head before the rotation (Qwen3's QK-norm)"),
      field("model.moe_experts", SB_MEMBER(model.moe_experts), moe,
            "routed experts of a Mixture-of-Experts block (docs/CONTRACT.md §MoE); 0: dense blocks only"),
      field("model.moe_top_k", SB_MEMBER(model.moe_top_k), moe, "routed experts per token (ties: the lower index)"),
      field("model.moe_shared_experts", SB_MEMBER(model.moe_shared_experts), moe,
            "experts every token of an MoE block visits (DeepSeek's shared experts)"),
      field("model.moe_every", SB_MEMBER(model.moe_every), moe,
            "an MoE block every moe_every blocks (blocks moe_every-1, 2*moe_every-1, ...); 1: all"),
      field("model.moe_ffn_dim", SB_MEMBER(model.moe_ffn_dim), moe, "an expert's hidden width; 0: model.ffn_dim's"),
      field("model.moe_router", SB_MEMBER(model.moe_router), moe,
            "softmax (gates: the selected experts' probabilities) or sigmoid (DeepSeek-V3: the selected scores "
            "normalised to sum 1)"),
      field("model.moe_aux_loss", SB_MEMBER(model.moe_aux_loss), moe,
            "the Switch/GShard load-balancing loss's coefficient (E * sum_e f_e * P_e per leaf); 0: none"),
      field("model.moe_capacity", SB_MEMBER(model.moe_capacity), moe,
            "capacity factor: an expert keeps its first ceil(factor * tokens * top_k / experts) tokens of a leaf "
            "by position; 0: dropless"),
      field("model.moe_bias_rate", SB_MEMBER(model.moe_bias_rate), moe,
            "DeepSeek-V3's auxiliary-loss-free balancing: a per-expert bias on the scores the top-k compares "
            "(never the gates), moved by +-rate after each step toward the mean load; 0: none"),
      // [data]
      field("data.source", SB_MEMBER(data.source), yes,
            "synthetic: the embedded synthetic language; shards: llm.c/nanoGPT .bin token files (path is a "
            "glob); text: a file read as bytes; hdf5: a 1-D integer token dataset"),
      field("data.path", SB_MEMBER(data.path), yes, "the file or glob to read; empty for synthetic"),
      field("data.val_path", SB_MEMBER(data.val_path), file_source,
            "validation data of a file source, in the same form as path; empty for synthetic (its validation "
            "stream is separate)"),
      field("data.seed", SB_MEMBER(data.seed), yes, "seed of the data order and of the synthetic language"),
      field("data.order_seed", SB_MEMBER(data.order_seed), reordered,
            "reseeds the sampling order alone: 0 = the order data.seed gives; n > 0 = a file source's epochs "
            "permuted by n, the synthetic source's first steps × leaves × leaf_size windows read in an order "
            "permuted by n (the language and the validation set stay)"),
      field("data.leaf_size", SB_MEMBER(data.leaf_size), yes,
            "sequences per leaf, the unit of exact gradient accumulation (docs/CONTRACT.md rule 4)"),
      field("data.leaves", SB_MEMBER(data.leaves), yes,
            "leaves per step; the global batch is leaves × leaf_size sequences on any number of ranks"),
      field("data.doc_len", SB_MEMBER(data.synthetic.doc_len), synthetic,
            "synthetic: tokens per document, BOS included"),
      field("data.mix_markov", SB_MEMBER(data.synthetic.mix_markov), synthetic,
            "synthetic: relative weight of Zipfian Markov runs"),
      field("data.mix_grammar", SB_MEMBER(data.synthetic.mix_grammar), synthetic,
            "synthetic: relative weight of bracket-grammar sentences with agreement"),
      field("data.mix_mark", SB_MEMBER(data.synthetic.mix_mark), synthetic,
            "synthetic: relative weight of marked spans"),
      field("data.mix_recall", SB_MEMBER(data.synthetic.mix_recall), synthetic,
            "synthetic: relative weight of recalls (exact copies of a marked span)"),
      field("data.markov_run", SB_MEMBER(data.synthetic.markov_run), synthetic,
            "synthetic: mean length of a Markov run, 1 … 1000"),
      field("data.span_min", SB_MEMBER(data.synthetic.span_min), synthetic, "synthetic: shortest marked span"),
      field("data.span_max", SB_MEMBER(data.synthetic.span_max), synthetic, "synthetic: longest marked span"),
      field("data.max_depth", SB_MEMBER(data.synthetic.max_depth), synthetic,
            "synthetic: deepest bracket nesting, 0 … 16"),
      // [optim]
      field("optim.name", SB_MEMBER(optim.name), yes,
            "muon: Muon for 2-D hidden matrices, AdamW for embeddings, head, norm gains and biases; normuon: "
            "the same with NorMuon's per-row normalisation of the update; adamw: AdamW for everything"),
      field("optim.lr", SB_MEMBER(optim.lr), yes,
            "peak learning rate (of the Muon matrices, or of everything under adamw)"),
      field("optim.weight_decay", SB_MEMBER(optim.weight_decay), yes,
            "decoupled weight decay W ← W·(1 − lr·wd); never applied to norm gains and biases"),
      field("optim.momentum", SB_MEMBER(optim.momentum), muon, "Muon momentum μ (see optim.momentum_form)"),
      field("optim.nesterov", SB_MEMBER(optim.nesterov), muon,
            "Muon Nesterov momentum: orthogonalise G + μ·M (sum form) or G + μ·(M − G) (lerp form) instead of M"),
      field("optim.momentum_form", SB_MEMBER(optim.momentum_form), lerp_momentum,
            "Muon momentum: sum M ← μ·M + G (Keller Jordan); lerp M ← M + (1 − μ)·(G − M), the EMA of "
            "torch.optim.Muon (samebits.torch.Muon)"),
      field("optim.ns_steps", SB_MEMBER(optim.ns_steps), muon, "Newton–Schulz iterations of Muon"),
      field("optim.ns_coefficients", SB_MEMBER(optim.ns_coefficients), muon,
            "Newton–Schulz coefficient table: keller (3.4445, -4.7750, 2.0315) every step, polar_express "
            "per-step tuples (the paper's), polar_express_8 (Emerging-Optimizers' 8 tuples; ns_steps >= 8), "
            "polar_express_5 (modded-nanogpt's 5 tuples), quintic (Emerging-Optimizers' 5 tuples, cycled), "
            "or custom (optim.ns_custom)"),
      field("optim.ns_custom", SB_MEMBER(optim.ns_custom), muon,
            "custom coefficients a, b, c (used every step) or one triple per Newton–Schulz step; only with "
            "ns_coefficients=custom"),
      field("optim.ns_eps", SB_MEMBER(optim.ns_eps), muon, "ε of the normalisation X = U / (‖U‖_F + ε)"),
      field("optim.scale", SB_MEMBER(optim.scale), muon,
            "Muon update scale: shape √max(1, rows/cols); moonlight 0.2·√max(rows, cols); spectral = "
            "unit_rms √(rows/cols); max_dim √max(rows, cols); none"),
      // torch.optim.Muon's name for the scale rule: sets optim.scale, which the texts write.
      alias("optim.adjust_lr_fn", "optim.scale", "original|match_rms_adamw", "original (optim.scale=shape)",
            "alias of optim.scale in torch.optim.Muon's words: original = shape, match_rms_adamw = moonlight",
            [](Config& c, std::string_view text) {
              const std::string v = config_value::trim(text);
              if (v == "original") c.optim.scale = MuonScale::shape;
              else if (v == "match_rms_adamw") c.optim.scale = MuonScale::moonlight;
              else throw BadConfigValue{"one of original, match_rms_adamw"};
            }),
      field("optim.momentum_warmup", SB_MEMBER(optim.momentum_warmup), muon,
            "steps over which Muon's μ rises linearly from momentum_warmup_start to momentum; 0 = off"),
      field("optim.momentum_warmup_start", SB_MEMBER(optim.momentum_warmup_start), momentum_warmup,
            "Muon's μ at step 0 when momentum_warmup > 0"),
      field("optim.adam_lr", SB_MEMBER(optim.adam_lr), muon,
            "peak learning rate of the AdamW group under muon (unused under adamw, where lr applies)"),
      field("optim.extra_scale", SB_MEMBER(optim.extra_scale), extra_scale,
            "Muon: a factor on the scale rule (Emerging-Optimizers' extra_scale_factor; 0.2 with "
            "scale=max_dim is Moonlight's rule)"),
      field("optim.split_qkv", SB_MEMBER(optim.split_qkv), split_qkv,
            "Muon: orthogonalise the Q, K and V blocks of each attn.qkv.w separately (Megatron-Core)"),
      field("optim.cautious_wd", SB_MEMBER(optim.cautious_wd), cautious_wd,
            "Muon matrices: apply weight decay only where the update and the weight agree in sign (cautious "
            "weight decay, modded-nanogpt)"),
      field("optim.normuon_beta2", SB_MEMBER(optim.normuon_beta2), normuon,
            "normuon: EMA factor β2 of each row's mean square of the orthogonalised update"),
      field("optim.adam_betas", SB_MEMBER(optim.adam_betas), yes, "AdamW β1, β2"),
      field("optim.adam_eps", SB_MEMBER(optim.adam_eps), yes, "AdamW ε"),
      field("optim.clip", SB_MEMBER(optim.clip), yes, "clip the global gradient norm (exact) to this value; 0 = off"),
      field("optim.qk_clip", SB_MEMBER(optim.qk_clip), qk_clip,
            "QK-clip of MuonClip (Kimi K2): after each update, scale W_q and W_k of every head whose largest "
            "attention logit of the step exceeded τ by √(τ/max); 0 = off; maxima recorded as series/qk_max_logit"),
      field("optim.tp_mode", SB_MEMBER(optim.tp_mode), tp_shortcut,
            "Muon on tensor-parallel shards: duplicated (Newton–Schulz on the gathered full matrix: the "
            "bits of parallel.tp=1), blockwise (Newton–Schulz on each rank's shard alone, Megatron-Core's "
            "shortcut), distributed (Newton–Schulz of the full matrix on the shards, each Gram matrix "
            "summed across the group in fp32, Emerging-Optimizers' mode) or distributed_exact (those sums "
            "exact: independent of rank order and MPI algorithm); all but duplicated are other numerics; "
            "docs/DISTRIBUTED.md §10"),
      // [train]
      field("train.steps", SB_MEMBER(train.steps), yes, "optimizer steps"),
      field("train.seed", SB_MEMBER(train.seed), yes, "seed of the parameter initialisation"),
      field("train.init", SB_MEMBER(train.init), no,
            "start from the weights of this safetensors file (samebits export: samebits or Hugging Face "
            "GPT-2 names) or Hugging Face GPT-2 directory instead of the seeded initialisation; the "
            "experiment holds the file's content hash, not its path (docs/EXPORT.md); empty = none"),
      field("train.init_digest", SB_MEMBER(train.init_digest), init,
            "XXH3-64 of train.init's file, 16 hex digits: computed from the file when not given (run files "
            "record it); a file with another hash is refused"),
      field("train.precision", SB_MEMBER(train.precision), yes,
            "fp32; bf16 compute with fp32 master weights; fp16 compute with fp32 master weights and a "
            "dynamic loss scale"),
      field("train.schedule", SB_MEMBER(train.schedule), yes,
            "learning-rate schedule after the warmup: constant, cosine to min_lr_ratio, wsd "
            "(warmup-stable-decay), or adaptive (cosine times the AdaScale gain measured from the step's "
            "gradient noise, docs/TRAINING.md)"),
      field("train.warmup", SB_MEMBER(train.warmup), yes, "steps of linear warmup from 0 to the peak learning rate"),
      field("train.decay_fraction", SB_MEMBER(train.decay_fraction), wsd,
            "wsd: fraction of the steps, at the end, over which the lr decays to min_lr_ratio × peak"),
      field("train.min_lr_ratio", SB_MEMBER(train.min_lr_ratio), decaying,
            "cosine and wsd: final learning rate as a fraction of the peak"),
      field("train.adaptive_beta", SB_MEMBER(train.adaptive_beta), adaptive,
            "adaptive: EMA factor β of the |G|² and tr(Σ) estimates behind the gain ρ = (B_noise + "
            "leaf_size)/(B_noise + batch)"),
      field("train.checkpoint_every", SB_MEMBER(train.checkpoint_every), no,
            "steps between checkpoints (resume points); 0 = none"),
      field("train.snapshot_steps", SB_MEMBER(train.snapshot_steps), no,
            "steps after which all parameters are stored in full, ascending (e.g. 0, 100, 300); empty = none"),
      field("train.keep_states", SB_MEMBER(train.keep_states), no,
            "keep the full state (parameters, optimizer, data cursor) every N steps for good, for samebits "
            "verify --from; 0 = none"),
      field("train.eval_every", SB_MEMBER(train.eval_every), yes, "steps between validation losses; 0 = no validation"),
      field("train.eval_leaves", SB_MEMBER(train.eval_leaves), yes, "size of the fixed validation set, in leaves"),
      field("train.loss_scale", SB_MEMBER(train.loss_scale), fp16, "fp16: initial dynamic loss scale"),
      field("train.loss_scale_growth_interval", SB_MEMBER(train.loss_scale_growth_interval), fp16,
            "fp16: overflow-free steps before the scale grows"),
      field("train.loss_scale_growth", SB_MEMBER(train.loss_scale_growth), fp16,
            "fp16: factor by which the scale grows"),
      field("train.loss_scale_backoff", SB_MEMBER(train.loss_scale_backoff), fp16,
            "fp16: factor applied to the scale when gradients overflow (that step is skipped)"),
      // [perturb]
      field("perturb.tensor", SB_MEMBER(perturb.tensor), perturbed,
            "the weight tensor to perturb, a name of the tensor table (e.g. h.0.attn.qkv.w; an unknown name "
            "is refused with the list of valid ones); empty = no perturbation"),
      field("perturb.index", SB_MEMBER(perturb.index), perturbed,
            "flat (row-major) element index in that tensor, 0 … numel-1"),
      field("perturb.ulps", SB_MEMBER(perturb.ulps), perturbed,
            "move the element this many representable fp32 values: up when positive, down when negative, "
            "through zero like the float line; non-zero"),
      field("perturb.step", SB_MEMBER(perturb.step), perturbed,
            "apply it after this many steps, just before the forward pass of the next (0 = the initial "
            "weights); the first step that can differ is step + 1"),
      // [numerics]: mode presets the four switches; a switch given explicitly (applied after it) wins.
      preset(field("numerics.mode", SB_MEMBER(numerics.mode), no,
                   "deterministic: the reproducibility contract; vendor: ordinary framework numerics. "
                   "Presets gemm, reduce, allreduce and leaf_sum; a switch given explicitly overrides it")),
      noted(field("numerics.gemm", SB_MEMBER(numerics.gemm), yes,
                  "matrix products: canonical ascending-k fma chains, vendor BLAS (OpenBLAS, cuBLAS), or exact "
                  "integer slices rounded once (CPU int8 kernels, CUDA int8 tensor cores; docs/CONTRACT.md)"),
            "canonical (vendor under mode=vendor)"),
      noted(field("numerics.reduce", SB_MEMBER(numerics.reduce), yes,
                  "row and scalar reductions: canonical orders, or native float sums in thread order (and "
                  "float atomics on CUDA)"),
            "canonical (native under mode=vendor)"),
      noted(field("numerics.allreduce", SB_MEMBER(numerics.allreduce), yes,
                  "gradient sum across ranks: exact fixed-point integers, or native float all-reduce"),
            "exact (native under mode=vendor)"),
      noted(field("numerics.leaf_sum", SB_MEMBER(numerics.leaf_sum), native_leaf_sum,
                  "a rank's leaf gradients summed: exactly and rounded once, or in fp32 in leaf order as a "
                  "framework accumulates gradients (native needs numerics.allreduce=native)"),
            "exact (native under mode=vendor)"),
      field("numerics.bf16_dot", SB_MEMBER(numerics.bf16_dot), bf16_pairs,
            "order of a bf16 matrix product's dot (train.precision=bf16, gemm=canonical): chain, one fma per k; "
            "or pairs, AVX512-BF16's vdpbf16ps order (odd then even product of each pair of k, bf16 subnormals "
            "read as 0, subnormal results flushed to 0), native where selftest trusts the instruction"),
      // [run]
      field("run.backend", SB_MEMBER(run.backend), no, "where the kernels run"),
      field("run.threads", SB_MEMBER(run.threads), no, "CPU threads; 0 = all hardware threads"),
      field("run.out", SB_MEMBER(run.out), no, "the run file (HDF5); empty = runs/<experiment id>.h5"),
      field("run.log_every", SB_MEMBER(run.log_every), no, "steps between log lines"),
      field("run.progress", SB_MEMBER(run.progress), no,
            "progress bar: auto (when stderr is a terminal), on, or off (plain lines)"),
      // [parallel]
      // Part of the experiment only where it changes the bits: the TP shortcuts of optim.tp_mode
      // compute on each rank's shard, so their results depend on the group size.
      field("parallel.tp", SB_MEMBER(parallel.tp), tp_shortcut,
            "tensor-parallel group size: mpirun -np N runs N/tp data-parallel groups of tp consecutive "
            "ranks; heads, the MLP's 4C and the vocabulary rows of the embedding and head split across a "
            "group (docs/DISTRIBUTED.md §10); part of the "
            "experiment only with a tp_mode other than duplicated"),
      field("parallel.pp", SB_MEMBER(parallel.pp), no,
            "pipeline stages: mpirun -np N runs N/(tp·pp) data-parallel groups; the blocks split into pp "
            "contiguous stages (embedding on the first, final norm, head and loss on the last), ranks in "
            "Megatron's order (tp fastest, then dp, then pp; docs/DISTRIBUTED.md §11); never changes a bit"),
      field("parallel.ep", SB_MEMBER(parallel.ep), no,
            "expert-parallel group size: the routed experts of every MoE block split over ep consecutive "
            "data-parallel ranks (Megatron's order tp-ep-dp-pp: expert-parallel groups inside data "
            "parallelism), each token's rows sent to its experts' ranks and back by all-to-all; needs "
            "model.moe_experts and the data-parallel size divisible by ep (docs/DISTRIBUTED.md §12); never "
            "changes a bit"),
      field("parallel.pp_schedule", SB_MEMBER(parallel.pp_schedule), no,
            "the order a stage runs its micro-batches (this data-parallel rank's leaves): 1f1b (one forward, "
            "one backward; at most pp activations kept) or gpipe (every forward, then every backward); never "
            "changes a bit"),
  };
}

#undef SB_MEMBER

}  // namespace

std::string ExperimentRule::describe() const {
  if (kind == Kind::always) return "yes";
  if (kind == Kind::never) return "no";
  return "when " + std::string(condition);
}

std::string ConfigField::default_text() const { return default_note.empty() ? text(Config{}) : default_note; }

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections = {
      {"model", "the GPT model (docs/CORE.md)"},
      {"data", "the token source and the global batch"},
      {"optim", "the optimizer: Muon for hidden matrices with AdamW for the rest, or AdamW alone"},
      {"train", "the loop: steps, schedule, precision, validation and what is recorded"},
      {"perturb",
       "one deliberate change of one weight, for divergence studies; part of the experiment when tensor is set"},
      {"numerics", "numerics switches (docs/CONTRACT.md); part of the experiment"},
      {"run", "execution configuration: never part of the experiment id"},
      {"parallel",
       "the ranks' layout (data × tensor parallel): part of the experiment id only where it changes the bits"},
  };
  return sections;
}

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = build_fields();
  return fields;
}

const ConfigField* find_config_field(std::string_view key) {
  for (const ConfigField& f : config_fields()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

}  // namespace sb
