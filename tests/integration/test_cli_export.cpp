// samebits export and train --init (docs/EXPORT.md), end to end through the binary: exported
// weights are the run's bit for bit in both formats; a run started from them begins at exactly
// those weights (import ∘ export = identity, memcmp), and is bitwise invariant across threads and
// across a stop and resume, and verifies; bad inputs get one clear error naming the file and the
// tensor, exit 2, and write nothing.
#include <doctest/doctest.h>

#include <cstring>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/inspect.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/run_file.hpp"

namespace {

using sbt::describe;
using sbt::run;
using sbt::TempDir;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One error line on stderr, exit 2, mentioning `part`.
void expect_error(const sbt::Result& r, const std::string& part) {
  CHECK_MESSAGE(r.code == 2, describe(r));
  CHECK_MESSAGE(r.output.find(part) != std::string::npos, describe(r));
  std::size_t errors = 0;
  for (std::size_t at = r.output.find("error:"); at != std::string::npos; at = r.output.find("error:", at + 1))
    ++errors;
  CHECK_MESSAGE(errors == 1, describe(r));
}

}  // namespace

TEST_CASE("export → train --init: the same bits, invariant across threads and resume; bad inputs") {
  TempDir dir;
  const std::string ini = dir / "tiny.ini";
  sbt::write_text(ini, sbt::tiny_config("snapshot_steps = 0, 10\n"));
  const std::string a = dir / "a.h5";
  REQUIRE_MESSAGE(run({"train", ini, "--out", a}).code == 0, "train A");
  const std::string st = dir / "a.safetensors", hf = dir / "a_hf", s10 = dir / "a10.safetensors";
  sbt::Result r = run({"export", a, st});
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  CHECK(r.output.find("exported the final state") != std::string::npos);
  REQUIRE(run({"export", a, "--format", "hf", hf}).code == 0);
  REQUIRE(run({"export", a, "--step", "10", s10}).code == 0);
  CHECK(sbt::fs::exists(hf + "/config.json"));

  const sb::run::RunReader ra = sb::run::RunReader::open(a);
  const sb::GPTConfig model = sb::cli::recorded_config(ra).model;
  const std::vector<float>& final_a = ra.read_final_state().weights;
  CHECK(same_bits(sb::io::read_gpt_weights(st, model), final_a));
  CHECK(same_bits(sb::io::read_gpt_weights(hf + "/model.safetensors", model), final_a));
  CHECK(same_bits(sb::io::read_gpt_weights(s10, model), ra.read_snapshot(10)));

  // Runs from the HF directory: their step-0 snapshot is A's final state, bit for bit.
  const std::string b1 = dir / "b1.h5", b2 = dir / "b2.h5";
  r = run({"train", ini, "--init", hf, "--out", b1});
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  const sb::run::RunReader rb = sb::run::RunReader::open(b1);
  CHECK(same_bits(rb.read_snapshot(0), final_a));
  CHECK(rb.info().experiment_text.find("init_digest = " + sb::io::file_digest(hf + "/model.safetensors")) !=
        std::string::npos);
  CHECK(rb.info().experiment_id != ra.info().experiment_id);
  // Threads, and a stop and resume: the same bits.
  REQUIRE(run({"train", ini, "--init", hf, "--out", b2, "--run.threads", "2"}).code == 0);
  r = run({"diff", b1, b2});
  CHECK_MESSAGE(r.code == 0, describe(r));
  // (the same relative --out in two folders: the recorded config and store name are the same)
  sbt::fs::create_directories(dir / "whole");
  sbt::fs::create_directories(dir / "resumed");
  const sbt::SpawnOptions whole{0, dir / "whole"}, resumed{0, dir / "resumed"};
  REQUIRE(run({"train", ini, "--init", hf, "--out", "b.h5"}, whole).code == 0);
  REQUIRE(run({"train", ini, "--init", hf, "--out", "b.h5", "--stop-after", "7"}, resumed).code == 0);
  REQUIRE(run({"train", ini, "--init", hf, "--out", "b.h5", "--resume"}, resumed).code == 0);
  CHECK(sbt::content_difference(dir / "whole/b.h5", dir / "resumed/b.h5") == "");
  r = run({"verify", b1});
  CHECK_MESSAGE(r.code == 0, describe(r));
  // The samebits-named file starts from the same weights (another file: another experiment id).
  const std::string c = dir / "c.h5";
  REQUIRE(run({"train", ini, "--train.init", st, "--out", c}).code == 0);
  CHECK(same_bits(sb::run::RunReader::open(c).read_snapshot(0), final_a));

  SUBCASE("bad export inputs") {
    expect_error(run({"export", a, st}), "already exists");
    expect_error(run({"export", a, "--step", "5", dir / "x.safetensors"}), "holds no parameters of step 5");
    expect_error(run({"export", a, "--format", "onnx", dir / "x"}), "--format 'onnx': expected safetensors or hf");
    expect_error(run({"export", dir / "none.h5", dir / "x"}), "none.h5");
    const std::string rms_ini = dir / "rms.ini", rms = dir / "rms.h5";
    sbt::write_text(rms_ini, "[model]\nnorm = rmsnorm\n" + sbt::tiny_config().substr(8));
    REQUIRE(run({"train", rms_ini, "--out", rms}).code == 0);
    expect_error(run({"export", rms, "--format", "hf", dir / "rms_hf"}), "neither GPT-2-shaped (model.norm=rmsnorm");
    CHECK(run({"export", rms, dir / "rms.safetensors"}).code == 0);
    CHECK(!sbt::fs::exists(dir / "x"));
  }
  SUBCASE("bad --init inputs: nothing is written") {
    const std::string out = dir / "bad.h5";
    expect_error(run({"train", ini, "--init", dir / "absent.safetensors", "--out", out}), "absent.safetensors");
    sbt::write_text(dir / "junk.safetensors", "not a safetensors file at all");
    expect_error(run({"train", ini, "--init", dir / "junk.safetensors", "--out", out}),
                 "junk.safetensors: the header length");
    std::vector<char> bytes = sbt::read_bytes(st);
    bytes.resize(bytes.size() - 100);
    sbt::write_bytes(dir / "cut.safetensors", bytes);
    expect_error(run({"train", ini, "--init", dir / "cut.safetensors", "--out", out}),
                 "cut.safetensors: tensor 'lnf.b': data_offsets");
    expect_error(run({"train", ini, "--init", st, "--model.vocab", "65", "--out", out}),
                 "tensor 'wte' has shape [64, 32] but this model (model.vocab=65");
    expect_error(run({"train", ini, "--init", hf, "--model.norm", "rmsnorm", "--out", out}),
                 "holds Hugging Face GPT-2 names");
    expect_error(run({"train", ini, "--init", st, "--train.init_digest", "0123456789abcdef", "--out", out}),
                 "has content hash");
    CHECK(!sbt::fs::exists(out));
    // The file behind a recorded run changed: verify refuses it by its hash.
    sbt::fs::copy_file(st, hf + "/model.safetensors", sbt::fs::copy_options::overwrite_existing);
    expect_error(run({"verify", b1}), "has content hash");
  }
}
