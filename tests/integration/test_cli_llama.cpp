// experiments/configs/llama_tiny.ini end to end (a few steps): `samebits train` records the same
// bits on 1, 2 and 4 threads, with one leaf per micro-batch and across a stop and resume (diff exit
// 0), with QK-norm and one key/value head too; vendor numerics differ (exit 1: the positive
// control). MPI layouts of these blocks: test_cli_tp.cpp and test_cli_pp.cpp.
#include <doctest/doctest.h>

#include <filesystem>

#include "integration/test_cli_support.hpp"

using namespace sbt;

namespace {

// Absolute: __FILE__ may be relative to the build directory, and the runs start in a temporary one.
const std::string kPreset =
    std::filesystem::absolute(std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() /
                              "experiments/configs/llama_tiny.ini")
        .string();

// llama_tiny.ini for 4 steps into dir/name.h5, with `args`.
std::string train(const TempDir& dir, const std::string& name, std::vector<std::string> args) {
  const std::string out = dir / (name + ".h5");
  std::vector<std::string> argv{"train",
                                kPreset,
                                "--train.steps",
                                "4",
                                "--train.warmup",
                                "1",
                                "--train.eval_every",
                                "4",
                                "--train.checkpoint_every",
                                "2",
                                "--run.progress",
                                "off",
                                "--out",
                                out};
  argv.insert(argv.end(), args.begin(), args.end());
  const Result r = run(argv);
  REQUIRE_MESSAGE(r.code == 0, describe(r));
  return out;
}

}  // namespace

TEST_CASE("llama_tiny.ini: identical on 1, 2 and 4 threads, micro-leaves and resume; vendor numerics differ") {
  TempDir dir;
  for (const std::vector<std::string> model :
       {std::vector<std::string>{}, {"--model.qk_norm", "true", "--model.n_kv_head", "1"}}) {
    const std::string tag = model.empty() ? "gqa" : "qk";
    std::vector<std::string> one = model;
    one.insert(one.end(), {"--run.threads", "1"});
    const std::string reference = train(dir, tag + "_ref", one);
    for (const char* threads : {"2", "4"}) {
      std::vector<std::string> args = model;
      args.insert(args.end(), {"--run.threads", threads});
      const Result same = run({"diff", reference, train(dir, tag + "_t" + threads, args)});
      CHECK_MESSAGE(same.code == 0, tag, " threads ", threads, ": ", same.output);
    }
    std::vector<std::string> micro = model;
    micro.insert(micro.end(), {"--run.threads", "2", "--micro-leaves", "1"});
    CHECK_MESSAGE(run({"diff", reference, train(dir, tag + "_micro", micro)}).code == 0, tag, " micro-leaves");
    std::vector<std::string> stop = model, resume = model;
    stop.insert(stop.end(), {"--stop-after", "2"});
    resume.insert(resume.end(), {"--resume"});
    train(dir, tag + "_resumed", stop);
    CHECK_MESSAGE(run({"diff", reference, train(dir, tag + "_resumed", resume)}).code == 0, tag, " resume");
    std::vector<std::string> vendor = model;
    vendor.insert(vendor.end(), {"--numerics.mode", "vendor"});
    const Result apart = run({"diff", reference, train(dir, tag + "_vendor", vendor)});
    CHECK_MESSAGE(apart.code == 1, tag, " vendor: ", apart.output);
  }
}
