// The experiment's configuration as plain structs (docs/CONFIG.md names), with validation, the
// resolved INI text and the experiment id. Contract: the id hashes only the fields that define the
// mathematics (model, data, optim, train, perturb, numerics), so the execution configuration
// (run.*) never changes it. Each member's key, type, help and experiment rule: the table of
// config_fields.hpp, which experiments/ reads INI files and --section.key options through.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/enum_names.hpp"
#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/numerics.hpp"
#include "samebits/core/tensor.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/token_source.hpp"

namespace sb {

// ---- enumerations and their spellings in config files ---------------------------------------
// NormKind, MlpKind, PosKind (gpt_shape.hpp), GemmMode, ReduceMode, Precision (numerics.hpp) and Device (tensor.hpp)
// belong to the code that obeys them; the others are defined here.

enum class DataSource { synthetic, shards, text, hdf5 };
enum class OptimizerName { muon, adamw, normuon };
enum class NsCoefficients { keller, polar_express, custom, polar_express_8, polar_express_5, quintic };
enum class MuonScale { shape, moonlight, spectral, none, unit_rms, max_dim };
enum class Schedule { constant, cosine, wsd, adaptive };
enum class NumericsMode { deterministic, vendor };
enum class AllreduceMode { exact, native };
enum class LeafSumMode { exact, native };
enum class Progress { automatic, on, off };
enum class TpMode { duplicated, blockwise, distributed, distributed_exact };
enum class MomentumForm { sum, lerp };

// The order a pipeline stage runs its micro-batches (the leaves) in (docs/DISTRIBUTED.md §11).
enum class PipeSchedule { one_f_one_b, gpipe };

// Their config spellings (enum_names.hpp); GemmMode, ReduceMode and Precision spell theirs in
// numerics.hpp. Device's must equal device_name (tensor.hpp): a unit test checks it.
template <>
struct EnumNames<NormKind> {
  static constexpr std::array<std::string_view, 2> names{"layernorm", "rmsnorm"};
};
template <>
struct EnumNames<MlpKind> {
  static constexpr std::array<std::string_view, 2> names{"gelu", "swiglu"};
};
template <>
struct EnumNames<PosKind> {
  static constexpr std::array<std::string_view, 2> names{"learned", "rope"};
};
template <>
struct EnumNames<MoeRouter> {
  static constexpr std::array<std::string_view, 2> names{"softmax", "sigmoid"};
};
template <>
struct EnumNames<DataSource> {
  static constexpr std::array<std::string_view, 4> names{"synthetic", "shards", "text", "hdf5"};
};
template <>
struct EnumNames<OptimizerName> {
  static constexpr std::array<std::string_view, 3> names{"muon", "adamw", "normuon"};
};
template <>
struct EnumNames<NsCoefficients> {
  static constexpr std::array<std::string_view, 6> names{"keller",          "polar_express",   "custom",
                                                         "polar_express_8", "polar_express_5", "quintic"};
};
template <>
struct EnumNames<MuonScale> {
  static constexpr std::array<std::string_view, 6> names{"shape", "moonlight", "spectral",
                                                         "none",  "unit_rms",  "max_dim"};
};
template <>
struct EnumNames<Schedule> {
  static constexpr std::array<std::string_view, 4> names{"constant", "cosine", "wsd", "adaptive"};
};
template <>
struct EnumNames<NumericsMode> {
  static constexpr std::array<std::string_view, 2> names{"deterministic", "vendor"};
};
template <>
struct EnumNames<AllreduceMode> {
  static constexpr std::array<std::string_view, 2> names{"exact", "native"};
};
template <>
struct EnumNames<LeafSumMode> {
  static constexpr std::array<std::string_view, 2> names{"exact", "native"};
};
template <>
struct EnumNames<Device> {
  static constexpr std::array<std::string_view, 2> names{"cpu", "cuda"};
};
template <>
struct EnumNames<Progress> {
  static constexpr std::array<std::string_view, 3> names{"auto", "on", "off"};
};
template <>
struct EnumNames<MomentumForm> {
  static constexpr std::array<std::string_view, 2> names{"sum", "lerp"};
};
template <>
struct EnumNames<TpMode> {
  static constexpr std::array<std::string_view, 4> names{"duplicated", "blockwise", "distributed", "distributed_exact"};
};
template <>
struct EnumNames<PipeSchedule> {
  static constexpr std::array<std::string_view, 2> names{"1f1b", "gpipe"};
};

// ---- the sections ----------------------------------------------------------------------------

// [model]: the GPT of docs/CORE.md is configured by its own GPTConfig (gpt_shape.hpp).

// [data]: the token source and the leaves of the global batch (docs/CONTRACT.md rule 10). The
// tokens' vocabulary is model.vocab; to_data_config() gives the datasets library its DataConfig.
struct DataConfig {
  DataSource source = DataSource::synthetic;
  std::string path;      // training data: shard glob, text file or FILE.h5:/dataset
  std::string val_path;  // validation data of a file source; empty for synthetic
  uint64_t seed = 1;     // the synthetic language, its streams and the epoch permutations
  // The sampling order alone (docs/DATA.md): 0 = today's order (a finite source's epochs permuted
  // by `seed`, a generated source read in stream order); n > 0: a finite source's epochs permuted
  // by n, a generated source's first train.steps × leaves × leaf_size windows read in an order
  // permuted by n. The tokens of the language and the validation set do not change.
  uint64_t order_seed = 0;
  int64_t leaf_size = 1;            // sequences per leaf
  int64_t leaves = 8;               // leaves per step: global batch = leaves × leaf_size sequences
  data::SyntheticConfig synthetic;  // the synthetic language's shape (docs/DATA.md)
};

// [optim]: Muon (Keller Jordan 2024; Moonlight 2025 scaling) with AdamW (Loshchilov & Hutter
// 2019) for embeddings, head, norm gains and biases; NorMuon (Muon with a per-row second moment,
// Li et al. 2025) likewise; or AdamW for everything.
struct OptimConfig {
  OptimizerName name = OptimizerName::muon;
  double lr = 0.02;           // peak learning rate (Muon matrices, or all tensors for adamw)
  double weight_decay = 0.0;  // decoupled; never applied to norm gains and biases
  double momentum = 0.95;     // Muon μ
  bool nesterov = true;
  // sum: M ← μ·M + G, U = G + μ·M (Keller Jordan); lerp: M ← M + (1 − μ)·(G − M), U = G + μ·(M − G)
  // (torch.optim.Muon's EMA form; its own experiments)
  MomentumForm momentum_form = MomentumForm::sum;
  int64_t ns_steps = 5;  // Newton–Schulz iterations
  NsCoefficients ns_coefficients = NsCoefficients::keller;
  std::vector<double> ns_custom;  // custom: (a, b, c) once, or one triple per step
  double ns_eps = 1e-7;           // X = U / (‖U‖_F + ns_eps)
  MuonScale scale = MuonScale::shape;
  int64_t momentum_warmup = 0;  // steps of linear μ warmup from momentum_warmup_start; 0 = off
  double momentum_warmup_start = 0.85;
  double adam_lr = 3e-3;  // peak lr of the AdamW group when name = muon
  std::array<double, 2> adam_betas{0.9, 0.95};
  double adam_eps = 1e-8;
  double clip = 1.0;  // global gradient-norm clip; 0 = off
  // Muon variants (docs/OPTIM.md §1.1); the defaults are plain Muon and leave the experiment id.
  double extra_scale = 1.0;     // multiplies the scale rule (Emerging-Optimizers' extra_scale_factor)
  bool split_qkv = false;       // orthogonalise the Q, K, V blocks of attn.qkv.w separately
  bool cautious_wd = false;     // Muon matrices: decay only where update and weight agree in sign
  double normuon_beta2 = 0.95;  // normuon: EMA factor of the per-row mean square of the update
  double qk_clip = 0.0;         // MuonClip's τ: rescale W_q, W_k of a head whose max logit > τ; 0 = off
  // Muon on tensor-parallel shards (docs/DISTRIBUTED.md §10): duplicated = Newton–Schulz on the
  // gathered full matrix (the bits of parallel.tp = 1); blockwise: on each rank's shard alone
  // (Megatron-Core's TP-local shortcut); distributed: on the full matrix from the shards, the
  // Gram matrices summed across the group in fp32 (Emerging-Optimizers' "distributed");
  // distributed_exact: the same with the Gram sums exact. The last three change the numerics.
  TpMode tp_mode = TpMode::duplicated;
  // true for the optimizers that take Muon on the matrices (muon, normuon)
  bool muon_family() const { return name != OptimizerName::adamw; }
};

// [train]: the loop, the schedule, precision, recording points and fp16 loss scaling.
struct TrainConfig {
  int64_t steps = 300;
  uint64_t seed = 1;  // parameter initialisation (Philox streams named per tensor)
  // Initial weights from a safetensors file (or a Hugging Face directory's model.safetensors;
  // docs/EXPORT.md) instead of the seeded initialisation; empty = none. The experiment holds the
  // file's content hash init_digest (16 hex digits, XXH3-64), not its path: parse_config computes
  // it from the file unless it is given, and the trainer refuses a file whose hash differs.
  std::string init;
  std::string init_digest;
  Precision precision = Precision::fp32;
  Schedule schedule = Schedule::cosine;
  int64_t warmup = 30;                        // linear warmup steps from 0 to the peak lr (every schedule)
  double decay_fraction = 0.2;                // wsd: the last fraction of steps decays to the floor
  double min_lr_ratio = 0.1;                  // cosine and wsd end at min_lr_ratio × peak
  int64_t checkpoint_every = 100;             // 0 = no periodic checkpoint
  std::vector<int64_t> snapshot_steps;        // full parameter snapshots after these steps (ascending)
  int64_t keep_states = 0;                    // a full state kept for good every N steps (verify --from); 0 = none
  int64_t eval_every = 50;                    // validation loss every N steps; 0 = off
  int64_t eval_leaves = 4;                    // size of the fixed validation set, in leaves
  double loss_scale = 65536.0;                // fp16: initial dynamic loss scale
  int64_t loss_scale_growth_interval = 1000;  // fp16: overflow-free steps before growing
  double loss_scale_growth = 2.0;
  double loss_scale_backoff = 0.5;  // fp16: factor applied on overflow (the step is skipped)
  double adaptive_beta = 0.9;       // adaptive: EMA factor of the noise estimates (optim/adaptive_lr.hpp)
};

// [perturb]: one deliberate change of one weight, for divergence studies (docs/STUDIES.md): element
// `index` (flat, row-major) of tensor `tensor` moves `ulps` representable fp32 values (up when
// positive, down when negative, through zero as the float line does) just before the forward pass
// of step step + 1, i.e. after `step` steps (0: the initial weights). Recorded snapshots,
// checkpoints and fingerprints of steps <= `step` are those of the unperturbed run; the first
// step whose results can differ is step + 1. A resumed run applies it only if it resumes at or
// before `step`. Empty `tensor`: off (and the section is not part of the experiment id).
struct PerturbConfig {
  std::string tensor;  // a parameter name of the tensor table, e.g. "h.0.attn.qkv.w"
  int64_t index = 0;   // flat element index in that tensor, 0 … numel-1
  int64_t ulps = 1;    // signed, non-zero
  int64_t step = 0;    // 0 … train.steps-1
  bool enabled() const { return !tensor.empty(); }
};
// Checks perturb against the model's tensor table and train.steps; throws sb::Error naming the
// key and value (an unknown tensor lists the valid names; an index out of range gives numel).
// Called by validate(config).
void validate_perturbation(const PerturbConfig& perturb, const GPTConfig& model, int64_t steps);

// [numerics]: docs/CONTRACT.md. `mode` is a preset for the four switches, which are what the code
// obeys: deterministic → gemm=canonical reduce=canonical allreduce=exact leaf_sum=exact; vendor →
// gemm=vendor reduce=native allreduce=native leaf_sum=native. A switch given explicitly (file or
// command line) overrides the preset, so a study can turn on one source of nondeterminism at a
// time. leaf_sum=native (a rank's leaves summed in fp32, as a framework accumulates gradients)
// needs allreduce=native: the exact all-reduce sums the exact leaf sums' words (validate()).
struct NumericsConfig {
  NumericsMode mode = NumericsMode::deterministic;
  GemmMode gemm = GemmMode::canonical;
  ReduceMode reduce = ReduceMode::canonical;
  AllreduceMode allreduce = AllreduceMode::exact;
  LeafSumMode leaf_sum = LeafSumMode::exact;
  Bf16Dot bf16_dot = Bf16Dot::chain;  // pairs: train.precision=bf16 and gemm=canonical only (validate())
};

// The switches of a mode's preset (its `mode` field set to `mode`).
NumericsConfig numerics_preset(NumericsMode mode);
// True when every switch is at its canonical/exact setting: the contract of docs/CONTRACT.md holds.
bool is_deterministic(const NumericsConfig& numerics);

// [run]: the execution configuration; none of it is part of the experiment id.
struct RunConfig {
  Device backend = Device::cpu;
  int64_t threads = 0;                      // 0 = all hardware threads
  std::string out;                          // run file; empty = runs/<experiment id>.h5
  int64_t log_every = 10;                   // a log line every N steps
  Progress progress = Progress::automatic;  // auto = a progress bar when stderr is a terminal
};

// [parallel]: the layout of the ranks; with optim.tp_mode = duplicated every layout gives the same
// bits and tp is not part of the experiment id; with a TP shortcut (blockwise, distributed…) the
// bits depend on the group size, and tp is part of it.
// pp and pp_schedule never change a bit (a stage moves activations and their gradients, and the
// leaves' gradients are summed exactly). World = DP × tp × pp in Megatron's order (tp fastest).
struct ParallelConfig {
  int64_t tp = 1;  // tensor-parallel group size: world = DP × tp × pp, groups of consecutive ranks
  int64_t pp = 1;  // pipeline stages: the blocks split into pp contiguous stages
  int64_t ep = 1;  // expert-parallel group size: the routed experts split over ep data-parallel ranks
  PipeSchedule pp_schedule = PipeSchedule::one_f_one_b;
};

struct Config {
  GPTConfig model;
  DataConfig data;
  OptimConfig optim;
  TrainConfig train;
  PerturbConfig perturb;
  NumericsConfig numerics;
  RunConfig run;
  ParallelConfig parallel;
};

// Equal resolved INI text, i.e. every field equal (doubles bitwise).
bool operator==(const Config& a, const Config& b);

// Throws sb::Error naming the first invalid key, its value, and what to do, e.g.
// "config model.n_embd=100 is not divisible by model.n_head=3; …".
void validate(const Config& config);

// The fully resolved configuration as INI text: every key of every section, fixed order, numbers
// in their shortest exact form (parsing the text gives back the identical Config).
std::string to_ini_text(const Config& config);

// The canonical text of the experiment: "# samebits experiment v1", then the resolved text of the
// keys whose experiment rule (config_fields.hpp) includes them for `config` — never [run],
// numerics.mode or the recording keys; others only where they can act or away from their defaults,
// so that experiments that do not use a key keep the ids they had before it existed.
std::string experiment_text(const Config& config);

// XXH3-64 of experiment_text, as 16 lowercase hex digits.
std::string experiment_id(const Config& config);

// run.out, or runs/<experiment id>.h5 when it is empty.
std::string run_path(const Config& config);

// What the datasets library needs to open the token source (source spelled, vocab = model.vocab).
data::DataConfig to_data_config(const Config& config);

// The training sampler's order: key data.order_seed (data.seed when it is 0); a generated source
// permuted in one block of train.steps × leaves × leaf_size windows when data.order_seed > 0.
data::SampleOrder sample_order(const Config& config);

// What the kernels obey: the gemm and reduce switches, the precision and the bf16 dot order.
Numerics to_numerics(const Config& config);

}  // namespace sb
