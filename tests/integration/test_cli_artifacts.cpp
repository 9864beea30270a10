// Artifact evaluation (docs/ARTIFACTS.md) as an evaluator runs it: verify --budget (plan first,
// a verdict per window, a fingerprint altered inside a window found and named), pack (the folder
// copied elsewhere verifies and checks its claims), the worked example claims file on the sweep
// of experiments/artifacts/quickstart (it holds; a wrong value fails naming the claim), and bad
// claims files and missing runs (one clear error each, exit 2).
#include <doctest/doctest.h>

#include <regex>

#include "integration/test_cli_support.hpp"
#include "samebits/core/io/run_seal.hpp"

namespace {

namespace fs = std::filesystem;
using sbt::run;
using sbt::TempDir;

const fs::path kSourceRoot = fs::path(__FILE__).parent_path().parent_path().parent_path();
const fs::path kExample = kSourceRoot / "experiments" / "artifacts" / "quickstart";

std::string train_tiny(const TempDir& dir, const std::string& name, const std::string& extra) {
  const std::string ini = (dir.path / (name + ".ini")).string(), out = (dir.path / (name + ".h5")).string();
  sbt::write_text(ini, sbt::tiny_config(extra));
  const auto r = run({"train", ini, "--out", out});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  return out;
}

// The example sweep, trained once for every test case of this file.
const fs::path& example_sweep() {
  static TempDir dir;
  static const fs::path out = [] {
    const fs::path o = dir.path / "sweep";
    const auto r = run({"sweep", (kExample / "sweep.ini").string(), "--out", o.string(), "--no-plot"});
    REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
    return o;
  }();
  return out;
}

std::string read_text(const fs::path& p) {
  const auto bytes = sbt::read_bytes(p.string());
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

TEST_CASE("verify --budget: plan first, every window identical, the report; an altered fingerprint is named") {
  TempDir dir;
  const std::string out = train_tiny(dir, "run", "keep_states = 5\n");
  const std::string report = (dir.path / "report.md").string();
  auto r = run({"verify", out, "--budget", "1m", "--seed", "7", "--report", report});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  const std::size_t plan = r.output.find("plan: verify");
  REQUIRE(plan != std::string::npos);
  CHECK(plan < r.output.find("verifying"));
  CHECK(r.output.find("seed 7: 4 of 4 windows, 20 of 20 steps") != std::string::npos);
  for (const char* w :
       {"steps 1-5 (from the start): IDENTICAL", "steps 6-10 (from the kept state of step 5): IDENTICAL",
        "steps 16-20 (from the kept state of step 15): IDENTICAL"}) {
    CHECK_MESSAGE(r.output.find(w) != std::string::npos, w);
  }
  CHECK(r.output.find("verdict: IDENTICAL (4 of 4 windows, 20 steps") != std::string::npos);
  const std::string md = read_text(report);
  CHECK(md.find("**Verdict: IDENTICAL**") != std::string::npos);
  CHECK(md.find("## This machine") != std::string::npos);
  CHECK(md.find("| 11-15 | kept state of step 10 | 5 |") != std::string::npos);
  CHECK(md.find("--seed 7") != std::string::npos);

  // The parameter fingerprint of wte after step 13 (window 11-15) altered, the file sealed again.
  sb::run::unseal_file(out);
  {
    sb::h5::File f = sb::h5::File::open(out, sb::h5::Mode::read_write);
    {
      sb::h5::Dataset d = f.dataset("series/param_fingerprint");
      std::vector<uint64_t> fp(std::size_t(d.shape()[0] * d.shape()[1]));
      d.read_into<uint64_t>(fp);
      fp[std::size_t(12 * d.shape()[1])] ^= 1;
      d.write<uint64_t>(fp);
    }
    f.close();
  }
  sb::run::seal_file(out);
  r = run({"verify", out, "--budget", "1m", "--seed", "7"});
  CHECK_MESSAGE(r.code == 1, sbt::describe(r));
  CHECK(r.output.find("steps 11-15 (from the kept state of step 10): MISMATCH at step 13") != std::string::npos);
  CHECK(r.output.find("steps 6-10 (from the kept state of step 5): IDENTICAL") != std::string::npos);
  CHECK(r.output.find("verdict: NOT REPRODUCED") != std::string::npos);

  for (const char* bad : {"10x", "m", "", "1.2.3s"}) {
    r = run({"verify", out, "--budget", bad});
    CHECK_MESSAGE(r.code == 2, bad, ": ", sbt::describe(r));
  }
  r = run({"verify", out, "--budget", "1m", "--from", "5"});
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));
}

TEST_CASE("the example claims file holds on its sweep; a wrong value fails naming the claim") {
  const fs::path& sweep = example_sweep();
  auto r = run({"claims", "check", (kExample / "CLAIMS.ini").string(), "--runs", (sweep / "runs").string(), "--budget",
                "15s", "--seed", "1"});
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));
  CHECK(r.output.find("FAILS") == std::string::npos);
  CHECK(r.output.find("verdict: all 7 claims hold; the 5 runs they rest on reproduce") != std::string::npos);

  TempDir dir;
  std::string text = read_text(kExample / "CLAIMS.ini");
  text.replace(text.find("value = 21"), 10, "value = 22");
  const std::string wrong = (dir.path / "wrong.ini").string();
  sbt::write_text(wrong, text);
  r = run({"claims", "check", wrong, "--runs", (sweep / "runs").string(), "--budget", "0"});
  CHECK_MESSAGE(r.code == 1, sbt::describe(r));
  CHECK(r.output.find("FAILS  ulp-1-diverges-at-21") != std::string::npos);
  CHECK(r.output.find("stated 22, recorded 21") != std::string::npos);
  CHECK(r.output.find("verdict: 1 claim FAIL: ulp-1-diverges-at-21") != std::string::npos);
  text = read_text(kExample / "CLAIMS.ini");
  text.replace(text.find("bits = 0x40a8fe2c"), 17, "bits = 0x40a8fe2d");  // one bit of the loss
  sbt::write_text(wrong, text);
  r = run({"claims", "check", wrong, "--runs", (sweep / "runs").string(), "--budget", "0"});
  CHECK_MESSAGE(r.code == 1, sbt::describe(r));
  CHECK(r.output.find("FAILS  final-loss") != std::string::npos);
}

TEST_CASE("pack, the folder copied elsewhere: verify and claims check from there") {
  const fs::path& sweep = example_sweep();
  TempDir dir;
  std::vector<std::string> args{"pack"};
  for (const char* name : {"threads-2", "threads-1", "micro-leaves-2", "vendor-gemm", "native-reduce", "ulp-1"}) {
    args.push_back((sweep / "runs" / (std::string(name) + ".h5")).string());
  }
  args.push_back((dir.path / "packed").string());
  args.push_back("--claims");
  args.push_back((kExample / "CLAIMS.ini").string());
  auto r = run(args);
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  fs::copy(dir.path / "packed", dir.path / "elsewhere", fs::copy_options::recursive);
  fs::remove_all(dir.path / "packed");
  const fs::path there = dir.path / "elsewhere";
  const std::string md = read_text(there / "EVALUATE.md");
  CHECK(md.find("samebits claims check CLAIMS.ini --budget 10m") != std::string::npos);
  CHECK(md.find("`samebits verify runs/ulp-1.h5 --from 20 --steps 10`") != std::string::npos);
  CHECK(fs::exists(there / "runs" / "ulp-1.config.ini"));
  CHECK(fs::exists(there / "runs" / "ulp-1.data.tsv"));
  CHECK(fs::exists(there / "report.md"));
  r = run({"claims", "check", "CLAIMS.ini", "--budget", "10s", "--seed", "2"}, {.cwd = there.string()});
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));
  r = run({"verify", "runs/threads-1.h5"}, {.cwd = there.string()});
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));
  r = run({"verify", there.string()});  // six runs: which one?
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));
  CHECK(r.output.find("6 run files") != std::string::npos);

  // One run packed: verify takes the folder as it is.
  r = run({"pack", (sweep / "runs" / "threads-1.h5").string(), (dir.path / "one").string()});
  REQUIRE_MESSAGE(r.code == 0, sbt::describe(r));
  fs::rename(dir.path / "one", dir.path / "one-moved");
  r = run({"verify", (dir.path / "one-moved").string()});
  CHECK_MESSAGE(r.code == 0, sbt::describe(r));
  r = run({"pack", (sweep / "runs" / "threads-1.h5").string(), (dir.path / "one-moved").string()});
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));  // never into a folder that is not empty
}

TEST_CASE("bad claims files and missing runs: one clear error each, exit 2") {
  const fs::path& sweep = example_sweep();
  TempDir dir;
  const std::string head = "[claims]\nruns = " + (sweep / "runs").string() + "\n";
  const std::string ok = "[claim a]\nquantity = identical\nruns = threads-2 threads-1\nvalue = yes\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head, "holds no [claim NAME] section"},
      {head + "[claim a]\nquantity = speed\nruns = threads-2\nvalue = 1\n", "quantity 'speed' is not one of"},
      {head + "[claim a]\nquantity = identical\nruns = threads-2\nvalue = yes\n", "names 2 runs"},
      {head + "[claim a]\nquantity = identical\nruns = threads-2 threads-1\n", "no value"},
      {head + "[claim a]\nquantity = identical\nruns = threads-2 threads-1\nvalue = maybe\n", "identical is yes or no"},
      {head + "[claim a]\nquantity = series\nrun = threads-2\nvalue = 1\n", "needs series = COLUMN and step = N"},
      {head + ok + "colour = red\n", "unknown key 'colour'"},
      {head + "[claim a]\nquantity = identical\nruns = threads-2 nowhere\nvalue = yes\n", "rests on run nowhere"},
      {head + "[something]\nx = 1\n" + ok, "unknown section"},
      {head + "this line has no equals sign\n" + ok, "claims file"},
      {head + "[claim a]\nquantity = series\nrun = threads-2\nseries = speed\nstep = 3\nvalue = 1\n",
       "series 'speed' is not a column"},
      {head + "[claim a]\nquantity = series\nrun = threads-2\nseries = loss\nstep = 99\nvalue = 1\n",
       "step 99 is not recorded"},
      {head + "[claim a]\nquantity = table_cell\nreport = report.md\nrow = ulp-1\ncolumn = colour\nvalue = 1\n",
       "has no table with column 'colour'"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string file = (dir.path / "claims.ini").string();
    sbt::write_text(file, text);
    const auto r = run({"claims", "check", file, "--budget", "0"});
    CHECK_MESSAGE(r.code == 2, text, "\n", sbt::describe(r));
    CHECK_MESSAGE(r.output.find(expected) != std::string::npos, text, "\n", sbt::describe(r));
    CHECK_MESSAGE(r.output.find("HOLDS") == std::string::npos, text, "\n", sbt::describe(r));
  }
  const auto r = run({"claims", "check", (dir.path / "none.ini").string()});
  CHECK_MESSAGE(r.code == 2, sbt::describe(r));
  CHECK(r.output.find("cannot read the claims file") != std::string::npos);
}
