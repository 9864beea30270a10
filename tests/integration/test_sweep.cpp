// `samebits sweep` (sweep.hpp) on tiny experiments: the grid's cartesian product and the reference
// rule; bad sweep files refused with the line, section and key; a sweep (two cells at a time)
// whose deterministic cells (threads, accumulation split) are identical to the reference, whose
// vendor cell diverges and whose 1-ULP cell diverges the step after its change, with report.md,
// its PNGs, summary.h5 and the pairwise matrix, and a rerun that trains nothing; a sweep stopped
// by SIGTERM that resumes to the same result; an mpirun cell (exit 77 without mpirun or MPI).
#include <doctest/doctest.h>

#include <algorithm>

#include "integration/test_cli_support.hpp"
#include "samebits/cli/sweep.hpp"
#include "support/skip.hpp"

namespace {

using namespace sbt;

// A tiny base experiment: 1 layer, 32 wide, 16 tokens, 4 leaves of 1 sequence.
std::string tiny_base(int steps) {
  return "[model]\nvocab = 64\nseq_len = 16\nn_layer = 1\nn_head = 2\nn_embd = 32\n"
         "[data]\nleaf_size = 1\nleaves = 4\n"
         "[train]\nsteps = " +
         std::to_string(steps) +
         "\nwarmup = 2\neval_every = 0\ncheckpoint_every = 5\n"
         "[run]\nthreads = 1\nlog_every = 10\n";
}

sb::h5::Group cell_group(const sb::h5::File& f, const std::string& name) { return f.group("cells").group(name); }

}  // namespace

TEST_CASE("sweep file: grid product, explicit cells, settings merged, groups and references") {
  TempDir dir;
  write_text(dir / "base.ini", tiny_base(8));
  write_text(dir / "s.ini", "[sweep]\nbase = base.ini\nout = " + (dir / "out") +
                                "\nsnapshot_every = 4\nset.train.steps = 6\n"
                                "[grid]\nrun.threads = 1, 2\nnumerics.gemm = canonical, vendor\n"
                                "[cell split]\nmicro_leaves = 2\nenv.OMP_WAIT_POLICY = passive\n"
                                "[cell adamw]\noptim.name = adamw\n"
                                "[cell adamw-seed]\noptim.name = adamw\ntrain.seed = 7\n"
                                "[cell pinned]\nnumerics.reduce = native\nreference = split\n"
                                "[cell variant]\nbinary = /opt/scalar/samebits\nranks = 3\n");
  sb::cli::SweepOptions options;
  options.set = {"train.warmup=1"};
  const sb::cli::SweepSpec spec = sb::cli::load_sweep(dir / "s.ini", options);
  std::vector<std::string> names;
  for (const auto& c : spec.cells) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"threads-1_gemm-canonical", "threads-1_gemm-vendor",
                                          "threads-2_gemm-canonical", "threads-2_gemm-vendor", "split", "adamw",
                                          "adamw-seed", "pinned", "variant"});
  const auto& first = spec.cells[0];
  CHECK(first.config.train.steps == 6);   // set.* in [sweep]
  CHECK(first.config.train.warmup == 1);  // --set
  CHECK(first.config.train.snapshot_steps == std::vector<int64_t>{0, 4});
  CHECK(first.run_path == (dir / "out") + "/runs/threads-1_gemm-canonical.h5");
  CHECK(spec.cells[4].micro_leaves == 2);
  CHECK(spec.cells[4].env == sb::cli::KeyValues{{"OMP_WAIT_POLICY", "passive"}});
  // Muon cells form one group whose reference is the first deterministic cell; the vendor cells
  // are other experiments of the same group.
  for (int i = 0; i < 5; ++i) {
    CHECK(spec.cells[i].group == first.group);
    CHECK(spec.cells[i].compare_to == "threads-1_gemm-canonical");
  }
  CHECK(spec.cells[1].experiment_id != first.experiment_id);
  CHECK(spec.cells[2].experiment_id == first.experiment_id);
  // AdamW is its own group; its reseeded cell compares with the unseeded one.
  CHECK(spec.cells[5].group != first.group);
  CHECK(spec.cells[6].group == spec.cells[5].group);
  CHECK(spec.cells[6].compare_to == "adamw");
  CHECK(spec.cells[5].compare_to == "adamw");
  CHECK(spec.cells[7].compare_to == "split");  // an explicit reference wins
  CHECK(spec.cells[8].compare_to == "threads-1_gemm-canonical");
  // The commands: this binary, or the cell's build variant under mpirun.
  const std::vector<std::string> plain = sb::cli::cell_command(spec, first, "/self/samebits");
  CHECK(plain.front() == "/self/samebits");
  CHECK(plain[1] == "train");
  CHECK(plain.back() == "--resume");
  CHECK(std::find(plain.begin(), plain.end(), "--run.out=" + first.run_path) != plain.end());
  CHECK(std::find(plain.begin(), plain.end(), "--train.warmup=1") != plain.end());
  const std::vector<std::string> split = sb::cli::cell_command(spec, spec.cells[4], "/self/samebits");
  CHECK(std::vector<std::string>(split.end() - 2, split.end()) == std::vector<std::string>{"--micro-leaves", "2"});
  const std::vector<std::string> variant = sb::cli::cell_command(spec, spec.cells[8], "/self/samebits");
  CHECK(variant.front() == "mpirun");
  const auto np = std::find(variant.begin(), variant.end(), "-np");
  REQUIRE(np != variant.end());
  CHECK(*(np + 1) == "3");
  CHECK(*(np + 2) == "/opt/scalar/samebits");
}

TEST_CASE("bad sweep files: exit 2 with the file, line, section and key") {
  TempDir dir;
  write_text(dir / "base.ini", tiny_base(4));
  const auto refused = [&](const std::string& text, const std::vector<std::string>& words) {
    write_text(dir / "bad.ini", text);
    const Result r = run({"sweep", dir / "bad.ini", "--list"});
    CHECK_MESSAGE(r.code == 2, describe(r));
    for (const std::string& w : words) CHECK_MESSAGE(r.output.find(w) != std::string::npos, w, " not in ", r.output);
  };
  refused("[sweep]\nbase = base.ini\n[cell a]\nthreads = 2\n", {"line 4", "[cell a]", "unknown key 'threads'"});
  refused("[sweep]\nbase = base.ini\n[cell a]\noptim.lrr = 1\n", {"[cell a]", "optim.lrr", "optim.lr"});
  refused("[sweep]\nbase = base.ini\n[cell a]\nranks = two\n", {"line 4", "ranks = 'two'"});
  refused("[sweep]\nbase = missing.ini\n[cell a]\n", {"line 2", "base = missing.ini", "relative to the sweep file"});
  refused("[sweep]\nbase = base.ini\nstep = 3\n[cell a]\n", {"line 3", "[sweep]", "unknown key 'step'"});
  refused("[sweep]\nbase = base.ini\n[cell a]\n[cell a]\n", {"two cells are named 'a'"});
  refused("[sweep]\nbase = base.ini\n[cell a]\nreference = b\n", {"[cell a]", "reference = b"});
  refused("[sweep]\nbase = base.ini\n[cell a]\nrun.out = x.h5\n", {"run.out is chosen by the sweep"});
  refused("[sweep]\nbase = base.ini\n[cells]\n", {"line 3", "unknown section [cells]"});
  refused("[sweep]\nbase = base.ini\n", {"has no cells"});
}

TEST_CASE("sweep: deterministic cells identical, vendor cell divergent, report, summary, rerun skips") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "base.ini", tiny_base(10));
  write_text(dir / "s.ini",
             "[sweep]\nbase = base.ini\nout = out\ntitle = tiny\nquestion = same bits?\nexpect = yes\n"
             "snapshot_every = 5\npairwise = on\n"
             "[cell ref]\n[cell threads-2]\nrun.threads = 2\n[cell split]\nmicro_leaves = 2\n"
             "[cell vendor]\nnumerics.mode = vendor\n"
             "[cell ulp]\nperturb.tensor = h.0.attn.qkv.w\nperturb.index = 5\nperturb.ulps = 1\nperturb.step = 4\n");
  const Result r = run({"sweep", "s.ini", "--jobs", "2"}, SpawnOptions{0, d});  // two cells at a time
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  for (const char* cell : {"ref", "threads-2", "split", "vendor", "ulp"}) {
    CHECK(fs::exists(dir / (std::string("out/runs/") + cell + ".h5")));
  }
  const std::string report =
      std::string(read_bytes(dir / "out/report.md").data(), read_bytes(dir / "out/report.md").size());
  CHECK(report.find("# tiny") != std::string::npos);
  CHECK(report.find("**Question.** same bits?") != std::string::npos);
  for (const char* row :
       {"| ref | (base) |", "| threads-2 | threads=2 |", "| split | micro_leaves=2 |", "| vendor | mode=vendor |",
        "| ulp | tensor=h.0.attn.qkv.w index=5 ulps=1 step=4 | ref | no | 5 |"}) {
    CHECK_MESSAGE(report.find(row) != std::string::npos, row);
    CHECK_MESSAGE(r.output.find(row) != std::string::npos, row);
  }
  {
    const sb::h5::File f = sb::h5::File::open(dir / "out/summary.h5");
    CHECK(f.attr_string("format") == "samebits-sweep");
    CHECK(f.attr_string("cells") == "ref\nthreads-2\nsplit\nvendor\nulp");
    for (const char* cell : {"ref", "threads-2", "split"}) {
      const sb::h5::Group g = cell_group(f, cell);
      CHECK_MESSAGE(g.attr_int("identical") == 1, cell);
      CHECK(g.attr_int("first_divergent_step") == 0);
      CHECK(g.attr_double("final_rel_l2") == 0.0);
      CHECK(g.attr_string("reference") == "ref");
      CHECK(g.dataset("distance_steps").read<int64_t>() == std::vector<int64_t>{0, 5, 10});
    }
    const sb::h5::Group v = cell_group(f, "vendor");
    CHECK(v.attr_int("identical") == 0);
    CHECK(v.attr_int("first_divergent_step") >= 1);
    CHECK(v.attr_double("final_rel_l2") > 0.0);
    CHECK(v.dataset("loss").read<float>().size() == 10);
    // The 1-ULP change after step 4: steps 1-4 and the snapshot at 0 equal, divergent from step 5.
    const sb::h5::Group u = cell_group(f, "ulp");
    CHECK(u.attr_int("identical") == 0);
    CHECK(u.attr_int("first_divergent_step") == 5);
    const std::vector<double> rel = u.dataset("rel_l2").read<double>();
    REQUIRE(rel.size() == 3);
    CHECK(rel[0] == 0.0);
    CHECK(rel[1] > 0.0);
    CHECK(rel[2] > 0.0);
    // Every pair: the three deterministic cells identical among themselves, the vendor cell not.
    const std::vector<int64_t> pairs = f.dataset("pairwise/first_divergent_step").read<int64_t>();
    REQUIRE(pairs.size() == 25);
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 5; ++j) {
        CHECK_MESSAGE((pairs[i * 5 + j] == 0) == (i == j || (i < 3 && j < 3)), i, ",", j);
      }
    }
  }
  CHECK(report.find("## Every pair") != std::string::npos);
  // The plots, where Debian's python has matplotlib and h5py (scripts/setup installs them).
  if (std::system("/usr/bin/python3 -c 'import matplotlib, h5py' > /dev/null 2>&1") == 0) {
    for (const char* png : {"loss.png", "loss_gap.png", "rel_l2.png", "first_divergence.png", "noise_scale.png"}) {
      CHECK_MESSAGE(fs::file_size(dir / (std::string("out/plots/") + png)) > 1000, png);
      CHECK(report.find(std::string("(plots/") + png + ")") != std::string::npos);
    }
  } else {
    CHECK(report.find("plots not drawn") != std::string::npos);
  }
  // A rerun trains nothing and leaves the run files as they were.
  const auto before = read_bytes(dir / "out/runs/split.h5");
  const Result again = run({"sweep", "s.ini"}, SpawnOptions{0, d});
  REQUIRE_MESSAGE(again.code == 0, describe(again));
  CHECK(again.output.find("training") == std::string::npos);
  CHECK(again.output.find("split: finished earlier") != std::string::npos);
  CHECK(read_bytes(dir / "out/runs/split.h5") == before);
}

TEST_CASE("sweep stopped by SIGTERM resumes its cells to the same bits") {
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "base.ini", tiny_base(600));
  write_text(dir / "s.ini", "[sweep]\nbase = base.ini\nout = out\nplot = off\n[cell a]\n[cell b]\nrun.threads = 2\n");
  {
    Child sweep({"sweep", "s.ini"}, SpawnOptions{0, d});
    // Stop it once cell a has logged step 50 (log_every = 10).
    for (int i = 0; i < 600; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto log = read_bytes(dir / "out/logs/a.log");
      if (std::string(log.begin(), log.end()).find("step 50/600") != std::string::npos) break;
    }
    sweep.kill(SIGTERM);
    const Result stopped = sweep.wait();
    CHECK_MESSAGE(stopped.code == 2, describe(stopped));
    CHECK(stopped.output.find("sweep interrupted") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "out/report.md"));
  }
  const Result r = run({"sweep", "s.ini"}, SpawnOptions{0, d});
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  const auto log = read_bytes(dir / "out/logs/a.log");
  CHECK(std::string(log.begin(), log.end()).find("resume: out/runs/a.h5 at step") != std::string::npos);
  CHECK(r.output.find("| b | threads=2 | a | **yes** |") != std::string::npos);
  const sb::h5::File f = sb::h5::File::open(dir / "out/summary.h5");
  CHECK(cell_group(f, "b").attr_int("identical") == 1);
  CHECK(cell_group(f, "a").attr_int("steps") == 600);
}

// Last: it exits 77 where there is no mpirun.
TEST_CASE("sweep: a ranks = 2 cell under mpirun is identical to one process") {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) sb::test::skip("no mpirun on PATH");
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir / "base.ini", tiny_base(10));
  write_text(dir / "s.ini", "[sweep]\nbase = base.ini\nout = out\nplot = off\n[cell one]\n[cell two]\nranks = 2\n");
  const Result r = run({"sweep", "s.ini"}, SpawnOptions{0, d});
  const auto log = read_bytes(dir / "out/logs/two.log");
  if (std::string(log.begin(), log.end()).find("built without MPI") != std::string::npos) {
    sb::test::skip("samebits was built without MPI");
  }
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  CHECK(r.output.find("| two | ranks=2 | one | **yes** |") != std::string::npos);
}
