// `samebits diff` with the divergence analysis and [perturb] end to end: a run perturbed by 1 ULP
// after step 5 first diverges at step 6 (its snapshots equal through step 5, apart after), the
// JSON carries the distance curve, growth and agreement, identical runs still exit 0; stopping and
// resuming before, at and after the perturbation step gives the uninterrupted run's bits; verify
// and inspect know the perturbation; --side-by-side trains two configs in one process.
#include <doctest/doctest.h>

#include "integration/test_cli_support.hpp"

namespace {

using namespace sbt;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kSnapshots = "snapshot_steps = 0, 4, 5, 6, 8, 12, 20\n";
const std::string kPerturb = "[perturb]\ntensor = h.0.attn.qkv.w\nindex = 17\nulps = 1\nstep = 5\n";

}  // namespace

TEST_CASE("samebits diff: a 1-ULP perturbation after step 5 diverges at step 6, with distance and agreement") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "base.ini", tiny_config(kSnapshots));
  write_text(dir / "pert.ini", tiny_config(kSnapshots + kPerturb));
  for (const auto& [ini, out] :
       {std::pair{"base.ini", "a.h5"}, std::pair{"base.ini", "a2.h5"}, std::pair{"pert.ini", "p.h5"}}) {
    const Result r = run({"train", ini, "--out", out}, SpawnOptions{0, d});
    REQUIRE_MESSAGE(r.code == 0, describe(r));
  }

  const Result same = run({"diff", dir / "a.h5", dir / "a2.h5", "--json"});
  CHECK_MESSAGE(same.code == 0, same.output);
  CHECK(contains(same.output, "\"identical\": true"));
  CHECK(contains(same.output, "\"growth\": {\"points\": 0, \"rate\": null"));
  CHECK(contains(same.output, "\"logit_correlation\": 1,"));

  const Result json = run({"diff", dir / "a.h5", dir / "p.h5", "--json"});
  CHECK_MESSAGE(json.code == 1, describe(json));
  CHECK(contains(json.output, "\"first_divergent_step\": 6,"));
  CHECK(contains(json.output, "perturb.tensor = (absent) | h.0.attn.qkv.w"));
  for (const char* zero : {"0", "4", "5"}) {
    CHECK_MESSAGE(contains(json.output, std::string("{\"step\": ") + zero + ", \"rel_l2\": 0, \"max_ulp\": 0,"), zero);
  }
  CHECK(contains(json.output, "{\"step\": 6, \"rel_l2\": "));
  CHECK_FALSE(contains(json.output, "{\"step\": 6, \"rel_l2\": 0,"));
  CHECK(contains(json.output, "\"growth\": {\"points\": 4,"));  // steps 6, 8, 12, 20
  CHECK(contains(json.output, "\"agreement\": [\n    {\"step\": 0, \"source\": \"snapshot\", \"positions\": 32,"));
  CHECK(contains(json.output, "{\"step\": 20, \"source\": \"snapshot\""));
  CHECK(contains(json.output, "\"agreement_note\": null"));

  const Result text = run({"diff", dir / "a.h5", dir / "p.h5"});
  CHECK(text.code == 1);
  CHECK(contains(text.output, "first divergent step 6"));
  CHECK(contains(text.output, "growth       ln(rel L2) grows"));
  CHECK(contains(text.output, "predictions  at step 20 (snapshot): "));
  const Result quiet = run({"diff", dir / "a.h5", dir / "p.h5", "--no-agreement", "--threshold", "1e-30"});
  CHECK(quiet.code == 1);
  CHECK_FALSE(contains(quiet.output, "predictions"));
  CHECK(contains(quiet.output, "rel L2 >= 1e-30 from step 6"));

  const Result inspect = run({"inspect", dir / "p.h5"});
  CHECK_MESSAGE(contains(inspect.output, "perturbation h.0.attn.qkv.w[17] +1 ULP before step 6 (after 5 steps)"),
                inspect.output);
  const Result verify = run({"verify", dir / "p.h5", "--run.threads", "2"});
  CHECK_MESSAGE(verify.code == 0, describe(verify));
}

TEST_CASE("a perturbed run stopped before, at or after the perturbation step resumes to the same bits") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "pert.ini", tiny_config("checkpoint_every = 4\n" + kSnapshots + kPerturb));
  REQUIRE(run({"train", "pert.ini", "--out", "whole.h5"}, SpawnOptions{0, d}).code == 0);
  for (const std::string stop : {"3", "5", "6"}) {
    CAPTURE(stop);
    const std::string out = "stop" + stop + ".h5";
    const Result first = run({"train", "pert.ini", "--out", out, "--stop-after", stop}, SpawnOptions{0, d});
    REQUIRE_MESSAGE(first.code == 0, describe(first));
    const Result second = run({"train", "pert.ini", "--out", out, "--resume"}, SpawnOptions{0, d});
    REQUIRE_MESSAGE(second.code == 0, describe(second));
    CHECK(contains(second.output, "at step " + stop));
    const Result same = run({"diff", dir / "whole.h5", dir / out});
    CHECK_MESSAGE(same.code == 0, same.output);
  }
}

TEST_CASE("samebits diff --side-by-side") {
  TempDir dir;
  write_text(dir / "run.ini", tiny_config());
  const Result same = run({"diff", "--side-by-side", dir / "run.ini", "--steps", "3"});
  CHECK_MESSAGE(same.code == 0, describe(same));
  CHECK(contains(same.output, "result       IDENTICAL"));

  const Result pert =
      run({"diff", "--side-by-side", dir / "run.ini", dir / "run.ini", "--steps", "8", "--every", "2", "--set",
           "b.perturb.tensor=h.0.attn.qkv.w", "--set", "b.perturb.step=5", "--set", "train.steps=12", "--json"});
  CHECK_MESSAGE(pert.code == 1, describe(pert));
  CHECK(contains(pert.output, "\"first_divergent_step\": 6,"));
  CHECK(contains(pert.output, "\"steps\": 8,"));
  CHECK(contains(pert.output, "train.steps") == false);  // set for both sides: no difference
  CHECK(contains(pert.output, "{\"step\": 4, \"rel_l2\": 0, \"max_ulp\": 0,"));
  CHECK(contains(pert.output, "{\"step\": 8, \"rel_l2\": "));

  // A-only override: another init seed differs from step 1 on.
  const Result seed =
      run({"diff", "--side-by-side", dir / "run.ini", "--steps", "2", "--set", "a.train.seed=2", "--no-agreement"});
  CHECK(seed.code == 1);
  CHECK(contains(seed.output, "train.seed = 2 | 1"));
  CHECK(contains(seed.output, "first divergent step 1"));

  CHECK(run({"diff", "--side-by-side", dir / "run.ini", "--set", "nonsense"}).code == 2);
  CHECK(run({"diff", "--side-by-side", dir / "run.ini", "--set", "b.perturb.tensor=nope"}).code == 2);
  CHECK(run({"diff", "--side-by-side", dir / "run.ini", "--steps", "21"}).code == 2);
  CHECK(run({"diff", dir / "run.ini", "--steps", "3"}).code == 2);
  const Result every = run({"diff", "--side-by-side", dir / "run.ini", "--every", "0"});
  CHECK(every.code == 2);
  CHECK_MESSAGE(every.output.find("samebits diff --every '0': expected an integer from 1 to") != std::string::npos,
                every.output);
}

TEST_CASE("samebits diff goes on without the agreement when the validation data is not found") {
  TempDir dir;
  const std::string d = dir.path.string();
  std::string text;
  for (int i = 0; i < 4000; ++i) text += char('a' + (i * 7 + i / 13) % 26);
  write_text(dir / "data.txt", text);
  write_text(dir / "run.ini", tiny_config(kSnapshots));
  const std::vector<std::string> data{"--model.vocab", "256",      "--data.source",   "text",
                                      "--data.path",   "data.txt", "--data.val_path", "data.txt"};
  for (const auto& [out, extra] : {std::pair{"a.h5", ""}, std::pair{"b.h5", "--perturb.tensor=wte"}}) {
    std::vector<std::string> args{"train", "run.ini", "--out", out};
    args.insert(args.end(), data.begin(), data.end());
    if (*extra) args.push_back(extra);
    const Result r = run(args, SpawnOptions{0, d});
    REQUIRE_MESSAGE(r.code == 0, describe(r));
  }
  const Result here = run({"diff", "a.h5", "b.h5", "--json"}, SpawnOptions{0, d});
  CHECK(here.code == 1);
  CHECK(contains(here.output, "\"agreement_note\": null"));
  const Result elsewhere = run({"diff", dir / "a.h5", dir / "b.h5", "--json"});  // data.txt is not here
  CHECK_MESSAGE(elsewhere.code == 1, describe(elsewhere));
  CHECK(contains(elsewhere.output, "\"first_divergent_step\": 1,"));
  CHECK(contains(elsewhere.output, "\"agreement\": [],"));
  CHECK(contains(elsewhere.output, "\"agreement_note\": \"skipped: "));
}
