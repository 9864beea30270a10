// GPT-2 small at full width: experiments/configs/gpt2_124m.ini — 12 layers, 768 wide,
// 12 heads, vocabulary 50257, Muon on the 48 hidden matrices and AdamW on the rest — trained for 2
// steps on generated llm.c shards (context 64 instead of 1024, 2 leaves), stopped after step 1,
// resumed in a new Trainer, equals the uninterrupted run bit for bit: every step's loss, validation
// loss, parameter and gradient fingerprints, and the final weights and optimizer state (memcmp).
// Nothing is downloaded: the shards hold GPT-2 token ids drawn by the synthetic language at V=50257.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "samebits/cli/options.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"
#include "support/train_bits.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kSourceRoot = fs::path(__FILE__).parent_path().parent_path().parent_path();
constexpr int kSeqLen = 64;

// Writes `count` version-1 (uint16) shards of `tokens` tokens each: consecutive pieces of the
// synthetic language's `split` stream at GPT-2's vocabulary.
void write_shards(const fs::path& dir, const std::string& stem, sb::data::Split split, int count, uint64_t tokens) {
  const sb::data::SyntheticLanguage language(sb::data::SyntheticConfig{}, 50257, 7, split);
  std::vector<int32_t> buf(tokens);
  for (int i = 0; i < count; ++i) {
    language.read(uint64_t(i) * tokens, tokens, buf.data());
    sb::data::ShardWriter writer((dir / (stem + "_00000" + std::to_string(i) + ".bin")).string(), 1);
    writer.append(buf.data(), tokens);
    writer.finish();
  }
}

struct Series {
  std::vector<float> losses, val_losses;
  std::vector<uint64_t> fingerprints;
};

void record(Series& s, const sb::StepResult& r) {
  s.losses.push_back(r.stats.loss);
  s.val_losses.push_back(r.stats.val_loss);
  s.fingerprints.insert(s.fingerprints.end(), r.param_fingerprints.begin(), r.param_fingerprints.end());
  s.fingerprints.insert(s.fingerprints.end(), r.grad_fingerprints.begin(), r.grad_fingerprints.end());
}

using sb::test::same_bits;

}  // namespace

TEST_CASE("gpt2_124m.ini: 2 steps on generated shards equal 1 step, stop, resume, 1 step") {
  const fs::path dir = fs::temp_directory_path() / ("samebits_gpt2_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  write_shards(dir, "gpt2_train", sb::data::Split::train, 2, 3000);  // a window may span both
  write_shards(dir, "gpt2_val", sb::data::Split::validation, 1, 1000);

  const sb::Config config = sb::cli::parse_config(
      (kSourceRoot / "experiments" / "configs" / "gpt2_124m.ini").string(),
      {"--data.path", (dir / "gpt2_train_*.bin").string(), "--data.val_path", (dir / "gpt2_val_*.bin").string(),
       "--model.seq_len", std::to_string(kSeqLen), "--data.leaves", "2", "--train.steps", "2", "--train.warmup", "0",
       "--train.eval_every", "1", "--train.eval_leaves", "1"});
  // The config's shape is GPT-2 small: 124,439,808 parameters at context 1024 (less the
  // position rows beyond kSeqLen here).
  REQUIRE(config.model.vocab == 50257);
  REQUIRE(config.model.n_layer == 12);
  REQUIRE(config.model.n_embd == 768);
  REQUIRE(config.model.n_head == 12);
  REQUIRE(config.model.tied_head);
  REQUIRE(config.data.source == sb::DataSource::shards);
  REQUIRE(config.optim.name == sb::OptimizerName::muon);
  size_t params = 0;
  for (const sb::ParamView& p : sb::gpt_param_layout(config.model)) params += p.numel;
  CHECK(params == 124439808u - size_t(1024 - kSeqLen) * 768u);

  sb::TrainerOptions options;
  options.statistics = false;  // fingerprints stay on: they are what is compared

  Series full, split;
  sb::TrainerState full_end;
  {
    sb::Trainer trainer(config, options);
    record(full, trainer.step());
    record(full, trainer.step());
    CHECK(trainer.finished());
    full_end = trainer.export_state();
  }
  // Muon holds momentum for the 48 hidden matrices, AdamW two moments for the rest.
  int muon = 0, adam = 0;
  for (const sb::StateArray& s : full_end.optimizer) {
    if (s.name.ends_with("/momentum")) ++muon;
    if (s.name.ends_with("/exp_avg")) ++adam;
  }
  CHECK(muon == 48);
  CHECK(adam == int(sb::gpt_param_layout(config.model).size()) - 48);

  sb::TrainerState stopped;
  {
    sb::Trainer trainer(config, options);
    record(split, trainer.step());
    stopped = trainer.export_state();  // what --stop-after 1 checkpoints
  }
  CHECK(stopped.step == 1);
  sb::TrainerState resumed_end;
  {
    sb::Trainer trainer(config, options);
    trainer.import_state(stopped);
    record(split, trainer.step());
    CHECK(trainer.finished());
    resumed_end = trainer.export_state();
  }

  CHECK(same_bits(full.losses, split.losses));
  CHECK(same_bits(full.val_losses, split.val_losses));
  CHECK(full.fingerprints.size() == 2 * 2 * sb::gpt_param_layout(config.model).size());
  CHECK(same_bits(full.fingerprints, split.fingerprints));
  CHECK(full.losses[1] != full.losses[0]);  // the first update moved the model
  sb::test::check_same_state(full_end, resumed_end);
  fs::remove_all(dir);
}
