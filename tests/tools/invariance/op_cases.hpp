// The invariance catalog's op cases (docs/INVARIANCE.md): every Backend op, the gradient
// accumulator, the tensor sums, the fingerprints and every optimizer kernel, each run once on
// fixed pseudo-random inputs (the same on every backend and build) with small shapes. A case's
// output is what the op writes: its fp32 values (compared bit for bit, ULP distances where they
// differ) and its integer results (exact sums' words, max keys, fingerprints: equal or not).
#pragma once
#include <cstdint>
#include <initializer_list>
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

// One fp32 output region of a case: n elements at p (backend memory).
struct Region {
  const float* p;
  size_t n;
};

// Backend memory for a case: host vectors uploaded, outputs downloaded; keeps its tensors.
class Buffers {
 public:
  explicit Buffers(Backend& be) : be_(be) {}
  Backend& backend() { return be_; }
  float* upload(const std::vector<float>& host);
  int32_t* upload(const std::vector<int32_t>& host);
  float* zeros(size_t n);
  template <class T>
  std::vector<T> download(const T* p, size_t n) {
    std::vector<T> out(n);
    be_.synchronize();
    be_.copy_to_host(out.data(), p, n * sizeof(T));
    return out;
  }
  // A case's output: the regions' values, downloaded one after another.
  OpOutput values(std::initializer_list<Region> regions);

 private:
  Backend& be_;
  std::vector<Tensor> keep_;
};

// n values uniform in [lo, hi), from `seed` (a fixed LCG: the same on every machine).
std::vector<float> uniform(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace sb::invariance
