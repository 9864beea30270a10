// export_logits RUN.h5 OUT_PREFIX: the logits samebits computes (CPU backend, fp32) from a run's
// final weights on two fixed pseudo-random sequences, for export_oracle.py, which loads the run's
// `samebits export` files into PyTorch and compares. Writes raw little-endian arrays:
//   OUT_PREFIX.tokens  int32 (2, seq_len): the inputs
//   OUT_PREFIX.logits  float32 (2, seq_len, vocab)
#include <cstdio>
#include <string>
#include <vector>

#include "samebits/cli/inspect.hpp"
#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"

namespace {

void write_raw(const std::string& path, const void* data, std::size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  SB_CHECK(f != nullptr, "cannot create ", path);
  const bool ok = std::fwrite(data, 1, bytes, f) == bytes;
  SB_CHECK(std::fclose(f) == 0 && ok, "writing ", path, " failed");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: export_logits RUN.h5 OUT_PREFIX\n");
    return 2;
  }
  try {
    using namespace sb;
    const run::RunReader run = run::RunReader::open(argv[1]);
    const Config config = cli::recorded_config(run);
    const GPTConfig& cfg = config.model;
    const int B = 2, T = cfg.seq_len;
    auto be = make_cpu_backend();
    GPT model(cfg, B, *be);
    const std::vector<float>& w = run.read_final_state().weights;
    SB_CHECK(w.size() == model.flat_size(), "final state of ", w.size(), " values for a model of ", model.flat_size());
    be->copy_from_host(model.weights().data(), w.data(), w.size() * sizeof(float));
    std::vector<int32_t> tokens(std::size_t(B) * (T + 1));  // (B, T + 1): inputs, then the next token
    uint32_t x = 1414213;
    for (int32_t& t : tokens) t = int32_t(((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(cfg.vocab));
    model.forward(tokens.data());
    std::vector<float> logits(std::size_t(B) * T * cfg.vocab);  // (B, T, V)
    be->copy_to_host(logits.data(), model.logits(), logits.size() * sizeof(float));
    std::vector<int32_t> inputs;  // (B, T)
    for (int b = 0; b < B; ++b)
      inputs.insert(inputs.end(), tokens.begin() + b * (T + 1), tokens.begin() + b * (T + 1) + T);
    write_raw(std::string(argv[2]) + ".tokens", inputs.data(), inputs.size() * sizeof(int32_t));
    write_raw(std::string(argv[2]) + ".logits", logits.data(), logits.size() * sizeof(float));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "export_logits: %s\n", e.what());
    return 1;
  }
  return 0;
}
