// Integration tests of Mixture-of-Experts runs (test_cli_moe, test_cli_ep): the forced-ties weights
// and the trace check of a layout's MoE run.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "integration/test_cli_support.hpp"
#include "samebits/core/io/safetensors.hpp"

namespace sbt {

// experiments/configs/moe_tiny.ini, absolute: __FILE__ may be relative to the build directory, and
// the runs start in a temporary one.
inline const std::string kMoePreset =
    std::filesystem::absolute(std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() /
                              "experiments/configs/moe_tiny.ini")
        .string();

// Its short run: 4 steps of 4 leaves of 2 sequences of 32 tokens, `eval_leaves` validation leaves
// at step 4, checkpoints every 2 steps.
inline std::string moe_short(int eval_leaves) {
  return " --model.seq_len 32 --data.leaf_size 2 --data.leaves 4 --train.steps 4 --train.warmup 1 --train.eval_every 4"
         " --train.eval_leaves " +
         std::to_string(eval_leaves) + " --train.checkpoint_every 2 --run.progress off --run.log_every 100";
}

// The weights of run `seed` (in dir) exported with every router zeroed, so that step 1 routes each
// token by a tie of all its experts: the path of the safetensors file written (zeros.safetensors).
inline std::string zeroed_routers(const TempDir& dir, const std::string& seed) {
  REQUIRE(run({"export", dir / seed, dir / "seed.safetensors"}).code == 0);
  const std::string path = dir / "seed.safetensors";
  const sb::io::SafetensorsHeader header = sb::io::read_safetensors_header(path);
  std::vector<sb::io::SafeTensor> tensors;
  for (const sb::io::SafeTensorEntry& e : header.tensors) {
    tensors.push_back({e.name, e.shape, sb::io::read_safetensor(path, header, e)});
    if (e.name.find(".moe.router.w") != std::string::npos)
      std::fill(tensors.back().data.begin(), tensors.back().data.end(), 0.0f);
  }
  const std::string zeros = dir / "zeros.safetensors";
  sb::io::write_safetensors(zeros, tensors);
  return zeros;
}

// `samebits trace` of one process's run against a layout's run of it: every op equal; against the
// layout's run with h.1.moe.e3.fc.w moved 1 ULP before step 2: the divergence at step 3, its
// origin that expert's GEMM.
inline void check_expert_trace(const TempDir& dir, const std::string& one, const std::string& layout,
                               const std::string& layout_ulp) {
  const Result equal = run({"trace", dir / one, dir / layout});
  CHECK_MESSAGE(equal.code == 0, equal.output);
  CHECK(equal.output.find("every op equal") != std::string::npos);
  const Result moved = run({"trace", dir / one, dir / layout_ulp});
  CHECK_MESSAGE(moved.code == 1, moved.output);
  CHECK(moved.output.find("first divergent step 3") != std::string::npos);
  CHECK(moved.output.find("origin: op") != std::string::npos);
  CHECK(moved.output.find("h.1.moe.e3 gemm") != std::string::npos);
}

}  // namespace sbt
