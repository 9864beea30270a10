// The invariance catalog's op cases (docs/INVARIANCE.md): every Backend op, the gradient
// accumulator, the tensor sums, the fingerprints and every optimizer kernel, each run once on
// fixed pseudo-random inputs (the same on every backend and build) with small shapes. A case's
// output is what the op writes: its fp32 values (compared bit for bit, ULP distances where they
// differ) and its integer results (exact sums' words, max keys, fingerprints: equal or not).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"

namespace sb::invariance {

struct OpOutput {
  std::vector<float> values;    // fp32 outputs, one region after another
  std::vector<uint64_t> words;  // integer outputs
  bool operator==(const OpOutput& o) const;
};

struct OpCase {
  std::string name;    // the op ("gemm", "adamw", "grad_accumulator", …): a row of the catalog
  std::string shapes;  // what the case runs ("37×53×600, 4 transpositions")
  OpOutput (*run)(Backend& backend);
};

// The Backend ops (op_cases_model.cpp), then the accumulator, sums, fingerprints and optimizer
// kernels (op_cases_optim.cpp), in catalog order.
std::vector<OpCase> model_op_cases();
std::vector<OpCase> optim_op_cases();
std::vector<OpCase> op_cases();

// The fingerprint of a case's output: "values-hash words-hash" (hex).
std::string output_fingerprint(const OpOutput& out);

// Backend memory for a case: host vectors uploaded, outputs downloaded; keeps its tensors.
class Buffers {
 public:
  explicit Buffers(Backend& be) : be_(be) {}
  Backend& backend() { return be_; }
  float* upload(const std::vector<float>& host);
  int32_t* upload(const std::vector<int32_t>& host);
  float* zeros(size_t n);
  std::vector<float> download(const float* p, size_t n);
  std::vector<int32_t> download(const int32_t* p, size_t n);

 private:
  Backend& be_;
  std::vector<Tensor> keep_;
};

// n values uniform in [lo, hi), from `seed` (a fixed LCG: the same on every machine).
std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
// Appends `more` to `out`.
void append(std::vector<float>& out, const std::vector<float>& more);

}  // namespace sb::invariance
