// sb::Config: validation messages name the key and value, the resolved INI text is exact and
// stable, and the experiment id changes with the mathematics and with nothing else.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "samebits/core/config.hpp"
#include "samebits/det/error.hpp"

namespace {

std::string validation_error(const sb::Config& c) {
  try {
    sb::validate(c);
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the defaults are the default Muon experiment and validate") {
  const sb::Config c;
  CHECK_NOTHROW(sb::validate(c));
  CHECK(c.model.vocab == 256);
  CHECK(c.model.n_embd == 128);
  CHECK(c.data.leaf_size == 1);
  CHECK(c.data.leaves == 8);
  CHECK(c.optim.name == sb::OptimizerName::muon);
  CHECK(sb::is_deterministic(c.numerics));
  CHECK(sb::run_path(c) == "runs/" + sb::experiment_id(c) + ".h5");
}

TEST_CASE("validation errors name the key, the value and what to do") {
  sb::Config c;
  c.model.n_embd = 100;
  c.model.n_head = 3;
  CHECK(validation_error(c) ==
        "config model.n_embd=100 is not divisible by model.n_head=3; choose n_embd as a multiple of n_head "
        "(e.g. 99 or 102)");

  c = sb::Config{};
  c.optim.lr = -0.1;
  CHECK(contains(validation_error(c), "config optim.lr=-0.1 must be a positive finite number"));

  c = sb::Config{};
  c.data.leaves = 0;
  CHECK(contains(validation_error(c), "config data.leaves=0 must be at least 1"));

  c = sb::Config{};
  c.model.n_layer = -2;
  CHECK(contains(validation_error(c), "config model.n_layer=-2 must be at least 1"));

  c = sb::Config{};
  c.data.path = "x.bin";
  CHECK(contains(validation_error(c), "data.source=synthetic reads no file"));

  c = sb::Config{};
  c.data.source = sb::DataSource::shards;
  CHECK(contains(validation_error(c), "config data.source=shards needs data.path"));

  c = sb::Config{};
  c.data.source = sb::DataSource::text;
  c.data.path = "book.txt";
  c.model.vocab = 100;
  CHECK(contains(validation_error(c), "data.source=text reads bytes"));

  c = sb::Config{};
  c.data.source = sb::DataSource::shards;
  c.data.path = "data # comment.bin";
  CHECK(contains(validation_error(c), "config data.path='data # comment.bin' contains '#'"));
  c.data.path = "a\x1b[2Jb\n";  // printed escaped, never raw
  CHECK(contains(validation_error(c), "config data.path='a\\x1b[2Jb\\x0a' contains"));
  CHECK_FALSE(contains(validation_error(c), "\x1b"));

  c = sb::Config{};
  c.optim.momentum = 1.0;
  CHECK(contains(validation_error(c), "config optim.momentum=1 must lie in [0, 1)"));

  c = sb::Config{};
  c.optim.ns_coefficients = sb::NsCoefficients::custom;
  c.optim.ns_custom = {1.0, 2.0};
  CHECK(contains(validation_error(c), "optim.ns_custom has 2 numbers"));
  c.optim.ns_custom = {3.4445, -4.775, 2.0315};
  CHECK(validation_error(c).empty());
  c.optim.ns_custom.resize(15, 1.0);  // 5 steps × 3
  CHECK(validation_error(c).empty());

  c = sb::Config{};
  c.optim.ns_custom = {1.0, 2.0, 3.0};
  CHECK(contains(validation_error(c), "optim.ns_custom is set but optim.ns_coefficients=keller"));

  c = sb::Config{};
  c.optim.momentum = 0.5;  // below momentum_warmup_start, which only matters with a warmup
  CHECK(validation_error(c).empty());
  c.optim.momentum_warmup = 100;
  CHECK(contains(validation_error(c), "config optim.momentum_warmup_start=0.85 must lie in [0, 0.5]"));

  c = sb::Config{};
  c.train.warmup = 400;
  CHECK(contains(validation_error(c), "config train.warmup=400 must lie in [0, train.steps=300]"));

  c = sb::Config{};
  c.train.schedule = sb::Schedule::wsd;
  c.train.warmup = 250;
  CHECK(contains(validation_error(c), "exceeds the run"));

  c = sb::Config{};
  c.train.snapshot_steps = {10, 5};
  CHECK(contains(validation_error(c), "train.snapshot_steps must be strictly ascending; 5 follows 10"));
  c.train.snapshot_steps = {0, 300, 301};
  CHECK(contains(validation_error(c), "train.snapshot_steps holds 301, outside [0, train.steps=300]"));

  c = sb::Config{};
  c.train.loss_scale_backoff = 1.0;
  CHECK(contains(validation_error(c), "config train.loss_scale_backoff=1 must lie in (0, 1)"));

  c = sb::Config{};
  c.run.threads = -1;
  CHECK(contains(validation_error(c), "config run.threads=-1 must be at least 0"));
  c = sb::Config{};
  c.model.n_kv_head = 3;  // n_head = 4
  CHECK(contains(validation_error(c), "model.n_kv_head=3 must divide model.n_head=4"));
  c.model.n_kv_head = 2;
  CHECK(validation_error(c).empty());
  c.parallel.tp = 4;
  CHECK(contains(validation_error(c), "config model.n_kv_head=2 is not divisible by parallel.tp=4"));
  c.parallel.tp = 1;
  c.optim.split_qkv = true;
  CHECK(contains(validation_error(c), "optim.split_qkv orthogonalises the three equal blocks"));
  c.optim.split_qkv = false;
  c.optim.qk_clip = 100;
  CHECK(contains(validation_error(c), "model.n_kv_head shares a key head; remove optim.qk_clip"));
  c.model.n_kv_head = 0, c.model.qk_norm = true;
  CHECK(contains(validation_error(c), "model.qk_norm=true normalises those heads; remove optim.qk_clip"));

  c = sb::Config{};
  c.model.moe_experts = 4, c.model.moe_top_k = 5;
  CHECK(contains(validation_error(c), "model.moe_top_k=5 must lie in [1, model.moe_experts=4]"));
  c.model.moe_top_k = 2, c.model.moe_every = 9;
  CHECK(contains(validation_error(c), "model.moe_every=9 must lie in [1, model.n_layer=4]"));
  c.model.moe_every = 1, c.model.moe_capacity = -1;
  CHECK(contains(validation_error(c), "model.moe_capacity=-1 must be 0 (dropless)"));
  c.model.moe_capacity = 0, c.model.moe_bias_rate = 2;
  CHECK(contains(validation_error(c), "model.moe_bias_rate=2 must lie in [0, 1]"));
  c.model.moe_bias_rate = 0, c.model.moe_ffn_dim = 175, c.parallel.tp = 2;
  CHECK(contains(validation_error(c), "model.moe_ffn_dim=175 is not divisible by parallel.tp=2"));
}

TEST_CASE("to_ini_text writes every section in a fixed order with exact numbers") {
  sb::Config c;
  c.optim.lr = 0.1 + 0.2;  // not a short decimal: needs 17 digits to round-trip
  c.optim.adam_eps = 1e-8;
  c.train.snapshot_steps = {0, 100, 300};
  const std::string text = sb::to_ini_text(c);
  CHECK(text.rfind("[model]\nvocab = 256\nseq_len = 128\n", 0) == 0);
  CHECK(contains(text, "\nlr = 0.30000000000000004\n"));
  CHECK(contains(text, "\nadam_eps = 1e-08\n"));
  CHECK(contains(text, "\nadam_betas = 0.9, 0.95\n"));
  CHECK(contains(text, "\nsnapshot_steps = 0, 100, 300\n"));
  CHECK(contains(text, "\npath =\n"));
  CHECK(contains(text, "\n[numerics]\nmode = deterministic\ngemm = canonical\n"));
  CHECK(contains(text, "\n[run]\nbackend = cpu\nthreads = 0\n"));
  CHECK(contains(text, "\nprogress = auto\n"));
  CHECK(sb::to_ini_text(c) == text);
}

TEST_CASE("equality is bitwise equality of every field") {
  sb::Config a;
  sb::Config b;
  CHECK(a == b);
  b.optim.weight_decay = -0.0;  // differs from +0.0 in its bits
  CHECK_FALSE(a == b);
  b = a;
  b.data.synthetic.span_max += 1;
  CHECK_FALSE(a == b);
}

TEST_CASE("the experiment id is 16 hex digits of the numerics-relevant fields only") {
  const sb::Config base;
  const std::string id = sb::experiment_id(base);
  CHECK(id.size() == 16);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);

  // The execution configuration and recording-only keys never change it.
  sb::Config same = base;
  same.run.threads = 7;
  same.run.backend = sb::Device::cuda;
  same.run.out = "elsewhere.h5";
  same.run.log_every = 1;
  same.run.progress = sb::Progress::off;
  same.train.checkpoint_every = 7;
  same.train.snapshot_steps = {1, 2};
  CHECK(sb::experiment_id(same) == id);

  // numerics.mode only presets the switches: equal switches, equal id.
  same = base;
  same.numerics.mode = sb::NumericsMode::vendor;
  CHECK(sb::experiment_id(same) == id);

  // The TP group size: execution configuration under tp_mode = duplicated (every layout gives the
  // one-process bits); part of the experiment under a shortcut, whose bits depend on it.
  same = base;
  same.parallel.tp = 4;
  CHECK(sb::experiment_id(same) == id);
  for (const sb::TpMode mode : {sb::TpMode::blockwise, sb::TpMode::distributed, sb::TpMode::distributed_exact}) {
    sb::Config t2 = base, t4 = base;
    t2.optim.tp_mode = t4.optim.tp_mode = mode;
    t2.parallel.tp = 2;
    t4.parallel.tp = 4;
    CHECK(sb::experiment_id(t2) != sb::experiment_id(t4));
  }

  // Keys that cannot act: loss scaling outside fp16, wsd's decay under cosine.
  same = base;
  same.train.loss_scale = 1024;
  same.train.decay_fraction = 0.5;
  CHECK(sb::experiment_id(same) == id);

  // Everything mathematical changes it.
  const auto differs = [&](auto change) {
    sb::Config c = base;
    change(c);
    return sb::experiment_id(c) != id;
  };
  CHECK(differs([](sb::Config& c) { c.optim.lr = 0.021; }));
  CHECK(differs([](sb::Config& c) { c.optim.name = sb::OptimizerName::adamw; }));
  CHECK(differs([](sb::Config& c) { c.model.n_layer = 5; }));
  CHECK(differs([](sb::Config& c) { c.model.tied_head = false; }));
  CHECK(differs([](sb::Config& c) { c.data.seed = 2; }));
  CHECK(differs([](sb::Config& c) { c.data.leaf_size = 2; }));
  CHECK(differs([](sb::Config& c) { c.data.synthetic.mix_recall = 0.2; }));
  CHECK(differs([](sb::Config& c) { c.train.seed = 2; }));
  CHECK(differs([](sb::Config& c) { c.train.steps = 301; }));
  CHECK(differs([](sb::Config& c) { c.train.precision = sb::Precision::bf16; }));
  CHECK(differs([](sb::Config& c) { c.train.eval_every = 10; }));
  CHECK(differs([](sb::Config& c) { c.numerics.gemm = sb::GemmMode::vendor; }));
  CHECK(differs([](sb::Config& c) { c.numerics.allreduce = sb::AllreduceMode::native; }));
  CHECK(differs([](sb::Config& c) { c.numerics.leaf_sum = sb::LeafSumMode::native; }));
  CHECK(differs([](sb::Config& c) { c.optim.adam_betas[1] = 0.999; }));

  // Under adamw the Muon keys cannot act; under fp16 the loss scale does.
  sb::Config adamw = base;
  adamw.optim.name = sb::OptimizerName::adamw;
  sb::Config adamw2 = adamw;
  adamw2.optim.momentum = 0.9;
  adamw2.optim.ns_steps = 3;
  adamw2.optim.adam_lr = 1e-3;
  CHECK(sb::experiment_id(adamw2) == sb::experiment_id(adamw));
  sb::Config fp16 = base;
  fp16.train.precision = sb::Precision::fp16;
  sb::Config fp16b = fp16;
  fp16b.train.loss_scale = 1024;
  CHECK(sb::experiment_id(fp16b) != sb::experiment_id(fp16));
}

TEST_CASE("numerics presets and the deterministic predicate") {
  const sb::NumericsConfig det = sb::numerics_preset(sb::NumericsMode::deterministic);
  CHECK(det.gemm == sb::GemmMode::canonical);
  CHECK(det.reduce == sb::ReduceMode::canonical);
  CHECK(det.allreduce == sb::AllreduceMode::exact);
  CHECK(sb::is_deterministic(det));
  const sb::NumericsConfig vendor = sb::numerics_preset(sb::NumericsMode::vendor);
  CHECK(vendor.mode == sb::NumericsMode::vendor);
  CHECK(vendor.gemm == sb::GemmMode::vendor);
  CHECK(vendor.reduce == sb::ReduceMode::native);
  CHECK(vendor.allreduce == sb::AllreduceMode::native);
  CHECK(vendor.leaf_sum == sb::LeafSumMode::native);
  CHECK(det.leaf_sum == sb::LeafSumMode::exact);
  CHECK_FALSE(sb::is_deterministic(vendor));
  sb::NumericsConfig one = det;
  one.allreduce = sb::AllreduceMode::native;
  CHECK_FALSE(sb::is_deterministic(one));
  one.allreduce = sb::AllreduceMode::exact;
  one.leaf_sum = sb::LeafSumMode::native;
  CHECK_FALSE(sb::is_deterministic(one));
}

TEST_CASE("config spellings agree with the owning headers' names") {
  // GemmMode, ReduceMode and Precision spell themselves once (numerics.hpp); Device twice.
  for (auto d : {sb::Device::cpu, sb::Device::cuda}) CHECK(sb::config_name(d) == sb::device_name(d));
  CHECK(sb::config_name(sb::Precision::bf16) == "bf16");
  CHECK(sb::config_enum<sb::GemmMode>("vendor") == sb::GemmMode::vendor);
  CHECK(sb::config_enum<sb::Schedule>("wsd") == sb::Schedule::wsd);
  CHECK(sb::config_enum<sb::Progress>("auto") == sb::Progress::automatic);
  CHECK_FALSE(sb::config_enum<sb::Schedule>("Cosine").has_value());
}

TEST_CASE("conversions for the datasets library and the kernels") {
  sb::Config c;
  c.model.vocab = 512;
  c.data.source = sb::DataSource::hdf5;
  c.data.path = "tokens.h5:/train";
  c.data.val_path = "tokens.h5:/val";
  c.data.seed = 9;
  c.data.synthetic.doc_len = 64;
  const sb::data::DataConfig d = sb::to_data_config(c);
  CHECK(d.source == "hdf5");
  CHECK(d.path == "tokens.h5:/train");
  CHECK(d.val_path == "tokens.h5:/val");
  CHECK(d.seed == 9);
  CHECK(d.vocab == 512);
  CHECK(d.synthetic.doc_len == 64);

  c.numerics = sb::numerics_preset(sb::NumericsMode::vendor);
  c.train.precision = sb::Precision::bf16;
  const sb::Numerics n = sb::to_numerics(c);
  CHECK(n.gemm == sb::GemmMode::vendor);
  CHECK(n.reduce == sb::ReduceMode::native);
  CHECK(n.precision == sb::Precision::bf16);
}
