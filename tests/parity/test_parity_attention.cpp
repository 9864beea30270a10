// Parity of causal multi-head attention, forward and backward: CUDA (one warp per query row,
// canonical dots, exact max, 32-lane sums; per-(row, channel) chains for dq, dk, dv) equals the
// CPU bit for bit, for sequence lengths and head sizes below, at and above 32, under every launch
// configuration; outputs inside guard bands.
#include "parity/parity_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"

namespace sb::test {
namespace {

struct AttnSize {
  int B, T, NH, hs;
};

TEST_CASE("attention forward and backward: CUDA equals the CPU bitwise") {
  require_gpu();
  auto cpu = make_cpu_backend(Numerics::deterministic());
  const AttnSize sizes[] = {{1, 1, 1, 1}, {2, 5, 3, 7}, {1, 33, 2, 32}, {2, 70, 3, 40}, {1, 129, 1, 64}};
  uint32_t seed = 7;
  for (const CudaLaunchConfig& launch : parity_launches()) {
    auto gpu = make_parity_gpu(Numerics::deterministic(), launch);
    for (const AttnSize s : sizes) {
      const int C = s.NH * s.hs;
      const size_t qkv_n = static_cast<size_t>(s.B) * s.T * 3 * C, out_n = static_cast<size_t>(s.B) * s.T * C;
      const size_t att_n = static_cast<size_t>(s.B) * s.NH * s.T * s.T;
      // Scores stay finite: |q·k| ≤ hs·4·4 (values up to 4 in magnitude).
      const std::vector<float> qkv = parity_values(qkv_n, seed += 3, 4.0f);
      const std::vector<float> dout = parity_values(out_n, seed + 1, 1e6f);
      std::vector<float> out(out_n), att(att_n), dqkv(qkv_n), datt(att_n);
      cpu->attention_forward(out.data(), att.data(), qkv.data(), s.B, s.T, C, s.NH);
      cpu->attention_backward(dqkv.data(), datt.data(), dout.data(), qkv.data(), att.data(), s.B, s.T, C, s.NH);
      Guarded gqkv(*gpu, qkv_n, qkv), gdout(*gpu, out_n, dout), gout(*gpu, out_n), gatt(*gpu, att_n),
          gdqkv(*gpu, qkv_n), gdatt(*gpu, att_n);
      gpu->attention_forward(gout.data(), gatt.data(), gqkv.data(), s.B, s.T, C, s.NH);
      gpu->attention_backward(gdqkv.data(), gdatt.data(), gdout.data(), gqkv.data(), gatt.data(), s.B, s.T, C, s.NH);
      const std::string on =
          detail::concat(" B=", s.B, " T=", s.T, " NH=", s.NH, " hs=", s.hs, " on ", gpu->describe());
      check_output(gout, out, "attention out" + on);
      check_output(gatt, att, "attention probabilities" + on);
      check_output(gdqkv, dqkv, "attention dqkv" + on);
      check_output(gdatt, datt, "attention d(scores)" + on);
    }
  }
}

}  // namespace
}  // namespace sb::test
