// `samebits train | inspect | diff | verify` as a user runs them, on tiny experiments: config errors
// are one line naming the key (exit 2); two runs of one experiment under different execution
// configurations are identical for diff (exit 0); a deterministic and a vendor-mode run differ and
// diff names the first divergent step (exit 1); verify reproduces a fresh run (exit 0) and names
// the step, tensor and element of an altered file (exit 1).
#include <doctest/doctest.h>

#include <regex>

#include "integration/run_file_edit.hpp"
#include "integration/test_cli_support.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/core/config_fields.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/fingerprint.hpp"
#ifdef SB_HAVE_CUDA
#include "samebits/core/cuda/cuda_backend.hpp"
#endif

namespace {

using sbt::edit_run_file;
using sbt::edit_store_file;
using sbt::Result;
using sbt::run;
using sbt::TempDir;

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// A finished tiny run at dir/name with extra [train] lines and command-line options.
std::string train(const TempDir& dir, const std::string& name, const std::string& train_extra,
                  std::vector<std::string> options = {}) {
  const std::string config = dir / (name + ".ini");
  sbt::write_text(config, sbt::tiny_config(train_extra));
  std::vector<std::string> args{"train", config, "--out", dir / (name + ".h5")};
  args.insert(args.end(), options.begin(), options.end());
  const Result r = run(args);
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  return dir / (name + ".h5");
}

}  // namespace

TEST_CASE("train --help lists every option; --print-config prints the resolved config and writes nothing") {
  const Result help = run({"train", "--help"});
  CHECK(help.code == 0);
  for (const auto& f : sb::config_fields())
    CHECK_MESSAGE(help.output.find("--" + f.key + " ") != std::string::npos, f.key);
  for (const char* flag : {"--resume", "--out", "--micro-leaves", "--print-config", "--stop-after"}) {
    CHECK(help.output.find(flag) != std::string::npos);
  }
  TempDir dir;
  sbt::write_text(dir / "c.ini", sbt::tiny_config());
  const Result printed =
      run({"train", dir / "c.ini", "--optim.lr", "0.01", "--print-config"}, sbt::SpawnOptions{0, dir.path.string()});
  CHECK(printed.code == 0);
  CHECK(printed.output == sb::to_ini_text(sb::cli::parse_config(dir / "c.ini", {"--optim.lr", "0.01"})));
  CHECK_FALSE(sbt::fs::exists(dir / "runs"));
  // No config file: the default experiment.
  const Result defaults = run({"train", "--print-config"});
  CHECK(defaults.code == 0);
  CHECK(defaults.output == sb::to_ini_text(sb::Config{}));
}

TEST_CASE("config errors: one line naming the key or file, exit 2, no run file") {
  TempDir dir;
  sbt::write_text(dir / "c.ini", sbt::tiny_config());
  sbt::write_text(dir / "small.txt", "hello world");
  const std::string c = dir / "c.ini", out = dir / "r.h5";
  struct Case {
    std::vector<std::string> args;
    const char* names;
  };
  const Case cases[] = {
      {{"train", c, "--model.n_emb", "32"}, "--model.n_emb"},
      {{"train", c, "--train.steps", "abc"}, "train.steps"},
      {{"train", c, "--optim.lr=-0.1"}, "optim.lr"},
      {{"train", c, "--model.n_embd", "30", "--model.n_head", "4"},
       "model.n_embd=30 is not divisible by model.n_head=4"},
      {{"train", c, "--model.vocab", "256", "--data.source", "text", "--data.path", dir / "small.txt"}, "seq_len"},
      {{"train", dir / "missing.ini"}, "missing.ini"},
      {{"train", c, "--data.source", "hdf5", "--model.vocab", "256", "--data.path", dir / "none.h5:/tokens"},
       "none.h5"},
      {{"train", c, "--numerics.gemm", "fast"}, "numerics.gemm"},
      {{"train", c, "--micro-leaves", "-1"}, "--micro-leaves"},
      {{"train", c, "--stop-after", "7x"}, "samebits train --stop-after '7x': expected an integer such as 4"},
      {{"train", c, "--stop-after"}, "--stop-after"},
      {{"train", c, "extra.ini"}, "extra.ini"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> args = k.args;
    args.insert(args.end(), {"--out", out});
    const Result r = run(args);
    CHECK_MESSAGE(r.code == 2, sbt::describe(r));
    CHECK_MESSAGE(count_lines(r.output) == 1, r.output);
    CHECK_MESSAGE(r.output.rfind("samebits train: error: ", 0) == 0, r.output);
    CHECK_MESSAGE(r.output.find(k.names) != std::string::npos, r.output);
    CHECK_FALSE(sbt::fs::exists(out));
  }
}

TEST_CASE("run.backend=cuda without a GPU (or without CUDA): one line naming run.backend, exit 2") {
#ifdef SB_HAVE_CUDA
  if (sb::cuda_device_count() > 0) return;  // this case is for machines without a GPU
#endif
  TempDir dir;
  sbt::write_text(dir / "c.ini", sbt::tiny_config());
  const Result r = run({"train", dir / "c.ini", "--run.backend", "cuda", "--out", dir / "r.h5"});
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));
  CHECK_MESSAGE(count_lines(r.output) == 1, r.output);
  CHECK_MESSAGE(r.output.find("run.backend") != std::string::npos, r.output);
  CHECK_FALSE(sbt::fs::exists(dir / "r.h5"));
}

TEST_CASE("train, inspect, an existing run, --resume of a finished run") {
  TempDir dir;
  const std::string a = train(dir, "a", "checkpoint_every = 5\nsnapshot_steps = 0, 10\n");
  const Result again = run({"train", dir / "a.ini", "--out", a});
  CHECK(again.code == 2);
  CHECK(again.output.find("already exists") != std::string::npos);
  const Result finished = run({"train", dir / "a.ini", "--out", a, "--resume"});
  CHECK(finished.code == 0);
  CHECK(finished.output.find("already finished") != std::string::npos);
  const Result other = run({"train", dir / "a.ini", "--out", a, "--resume", "--optim.lr", "0.01"});
  CHECK(other.code == 2);
  CHECK(other.output.find("records experiment") != std::string::npos);

  const Result i = run({"inspect", a});
  REQUIRE_MESSAGE(i.code == 0, i.output);
  for (const char* s : {"status       finished", "20 of 20 recorded", "snapshots    steps 0, 10",
                        "final state  step 20", "muon, fp32, deterministic", "world size 1"}) {
    CHECK_MESSAGE(i.output.find(s) != std::string::npos, s, "\n", i.output);
  }
  const Result missing = run({"inspect", dir / "nothing.h5"});
  CHECK(missing.code == 2);
  CHECK(count_lines(missing.output) == 1);
  CHECK(run({"inspect"}).code == 2);
}

TEST_CASE("diff: identical across execution configurations (exit 0); deterministic vs vendor (exit 1, first step)") {
  TempDir dir;
  const std::string extra = "snapshot_steps = 10\n";
  const std::string a = train(dir, "a", extra);
  const std::string b = train(dir, "b", extra, {"--run.threads", "2", "--micro-leaves", "1"});
  const Result same = run({"diff", a, b});
  CHECK_MESSAGE(same.code == 0, same.output);
  CHECK(same.output.find("IDENTICAL") != std::string::npos);
  CHECK(same.output.find("parameters at step 10 (snapshot): all 16 tensors bitwise identical") != std::string::npos);
  const Result json = run({"diff", a, b, "--json"});
  CHECK(json.code == 0);
  CHECK(json.output.find("\"identical\": true") != std::string::npos);
  CHECK(json.output.find("\"first_divergent_step\": null") != std::string::npos);

  const std::string v = train(dir, "v", extra, {"--numerics.mode", "vendor", "--run.threads", "2"});
  const Result differ = run({"diff", a, v});
  CHECK_MESSAGE(differ.code == 1, differ.output);
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(differ.output, m, std::regex("first divergent step (\\d+)")), differ.output);
  const int first = std::stoi(m[1]);
  CHECK(first >= 1);
  CHECK(differ.output.find("numerics.gemm = canonical | vendor") != std::string::npos);
  const Result vjson = run({"diff", a, v, "--json"});
  CHECK(vjson.code == 1);
  CHECK(vjson.output.find("\"first_divergent_step\": " + std::to_string(first)) != std::string::npos);
  CHECK(vjson.output.find("\"same_experiment\": false") != std::string::npos);

  CHECK(run({"diff", a}).code == 2);
  CHECK(run({"diff", a, dir / "none.h5"}).code == 2);
}

TEST_CASE("verify: a fresh run reproduces; altered fingerprints and values are found with step, tensor, element") {
  TempDir dir;
  const std::string a = train(dir, "a", "snapshot_steps = 7\n");
  const Result ok = run({"verify", a, "--run.threads", "2"});
  CHECK_MESSAGE(ok.code == 0, ok.output);
  CHECK(ok.output.find("verified " + a + ": 20 steps match bit for bit") != std::string::npos);
  const Result some = run({"verify", a, "--steps", "5"});
  CHECK(some.code == 0);
  CHECK(some.output.find(": 5 steps match") != std::string::npos);
  CHECK(run({"verify", a, "--steps", "21"}).code == 2);
  const Result what = run({"verify", a, "--optim.lr", "0.1"});
  CHECK(what.code == 2);
  CHECK(what.output.find("only run.* options") != std::string::npos);

  // A recorded fingerprint altered at step 12 (no parameters stored there).
  sbt::copy_run(a, dir / "fp.h5");
  edit_run_file(dir / "fp.h5", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("series/param_fingerprint");
    std::vector<uint64_t> row = d.read_rows<uint64_t>(11, 1);
    row[4] ^= 1;
    d.write_rows<uint64_t>(11, row);
  });
  const Result fp = run({"verify", dir / "fp.h5"});
  CHECK_MESSAGE(fp.code == 1, fp.output);
  CHECK(fp.output.find("MISMATCH at step 12") != std::string::npos);
  CHECK(fp.output.find("parameters  h.0.attn.qkv.w: recorded fingerprint") != std::string::npos);
  CHECK(fp.output.find("element values need a snapshot there") != std::string::npos);

  // The same at step 7, where the file holds the parameters: they equal the re-run's.
  sbt::copy_run(a, dir / "fp7.h5");
  edit_run_file(dir / "fp7.h5", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("series/param_fingerprint");
    std::vector<uint64_t> row = d.read_rows<uint64_t>(6, 1);
    row[0] ^= 1;
    d.write_rows<uint64_t>(6, row);
  });
  const Result fp7 = run({"verify", dir / "fp7.h5"});
  CHECK(fp7.code == 1);
  CHECK(fp7.output.find("MISMATCH at step 7") != std::string::npos);
  CHECK(fp7.output.find("recorded fingerprints are wrong") != std::string::npos);

  // A value changed by one ULP at step 7 with a consistent fingerprint, as a run on a machine that
  // rounds differently would record: verify names the element, both values and 1 ULP.
  sbt::copy_run(a, dir / "ulp.h5");
  std::vector<float> values;
  edit_store_file(dir / "ulp.h5", 7, [&](sb::h5::File& f) {
    sb::h5::Dataset w = f.dataset("params/h.0.mlp.fc.w");
    values = w.read<float>();
    values[3 * 32 + 5] = std::nextafter(values[3 * 32 + 5], 1e9f);
    w.write<float>(values);
  });
  edit_run_file(dir / "ulp.h5", [&](sb::h5::File& f) {
    const size_t t = 10;  // h.0.mlp.fc.w in the layout
    sb::h5::Dataset d = f.dataset("series/param_fingerprint");
    std::vector<uint64_t> row = d.read_rows<uint64_t>(6, 1);
    row[t] = sb::det::fingerprint(values.data(), values.size());
    d.write_rows<uint64_t>(6, row);
  });
  const Result ulp = run({"verify", dir / "ulp.h5"});
  CHECK_MESSAGE(ulp.code == 1, ulp.output);
  CHECK(ulp.output.find("MISMATCH at step 7") != std::string::npos);
  CHECK(ulp.output.find("element     h.0.mlp.fc.w[3, 5]: recorded 0x") != std::string::npos);
  CHECK(ulp.output.find(", 1 ULP apart") != std::string::npos);
  CHECK(ulp.output.find("from the snapshot of step 7") != std::string::npos);

  // An edited config no longer hashes to the recorded experiment id.
  sbt::copy_run(a, dir / "cfg.h5");
  edit_run_file(dir / "cfg.h5", [](sb::h5::File& f) {
    std::string text = f.attr_string("config");
    text.replace(text.find("lr = 0.02"), 9, "lr = 0.03");
    f.set_attr("config", text);
  });
  const Result cfg = run({"verify", dir / "cfg.h5"});
  CHECK(cfg.code == 2);
  CHECK(cfg.output.find("but the file records experiment") != std::string::npos);
}

TEST_CASE("verify --from S: a window of a run reproduces from a kept state without replaying the steps before") {
  TempDir dir;
  const std::string a = train(dir, "a", "keep_states = 5\ncheckpoint_every = 0\n");
  CHECK(sb::run::RunReader::open(a).state_steps() == std::vector<int64_t>{5, 10, 15, 20});
  const Result window = run({"verify", a, "--from", "10", "--steps", "5", "--run.threads", "1"});
  CHECK_MESSAGE(window.code == 0, window.output);
  CHECK(window.output.find("5 steps after the state of step 10 match bit for bit") != std::string::npos);
  const Result to_end = run({"verify", a, "--from", "15"});
  CHECK_MESSAGE(to_end.code == 0, to_end.output);
  CHECK(to_end.output.find("5 steps after the state of step 15 match") != std::string::npos);

  // A fingerprint altered at step 12, inside the window: found there.
  sbt::copy_run(a, dir / "fp.h5");
  edit_run_file(dir / "fp.h5", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("series/grad_fingerprint");
    std::vector<uint64_t> row = d.read_rows<uint64_t>(11, 1);
    row[2] ^= 1;
    d.write_rows<uint64_t>(11, row);
  });
  const Result fp = run({"verify", dir / "fp.h5", "--from", "10", "--steps", "5"});
  CHECK_MESSAGE(fp.code == 1, fp.output);
  CHECK(fp.output.find("MISMATCH at step 12") != std::string::npos);
  CHECK(fp.output.find("(1 steps matched before it)") != std::string::npos);
  CHECK(run({"verify", dir / "fp.h5", "--from", "15"}).code == 0);  // the window after it

  // No state at 7: refused with the kept steps; and windows beyond the run.
  const Result none = run({"verify", a, "--from", "7"});
  CHECK(none.code == 2);
  CHECK_MESSAGE(
      none.output.find("keeps no state of step 7; its store keeps states of steps 5, 10, 15, 20") != std::string::npos,
      none.output);
  CHECK(run({"verify", a, "--from", "10", "--steps", "11"}).code == 2);
  CHECK(run({"verify", a, "--from", "20"}).code == 2);
  const Result bad = run({"verify", a, "--from", "x"});
  CHECK(bad.code == 2);
  CHECK_MESSAGE(bad.output.find("samebits verify --from 'x': expected an integer such as 4") != std::string::npos,
                bad.output);
}
