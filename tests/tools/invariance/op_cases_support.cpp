// op_cases.hpp: the cases' buffers, inputs and output fingerprints.
#include <cstring>

#include "invariance/op_cases.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::invariance {

bool OpOutput::operator==(const OpOutput& o) const {
  return values.size() == o.values.size() && words == o.words &&
         std::memcmp(values.data(), o.values.data(), values.size() * sizeof(float)) == 0;
}

std::vector<OpCase> op_cases() {
  std::vector<OpCase> all = model_op_cases();
  for (OpCase& c : optim_op_cases()) all.push_back(std::move(c));
  return all;
}

std::string output_fingerprint(const OpOutput& out) {
  return det::fingerprint_hex(det::fingerprint(out.values.data(), out.values.size())) + " " +
         det::fingerprint_hex(det::fingerprint(out.words.data(), out.words.size() * sizeof(uint64_t)));
}

float* Buffers::upload(const std::vector<float>& host) {
  float* p = zeros(host.size());
  be_.copy_from_host(p, host.data(), host.size() * sizeof(float));
  return p;
}

int32_t* Buffers::upload(const std::vector<int32_t>& host) {
  Tensor& t = keep_.emplace_back(be_.alloc(DType::i32, {static_cast<int64_t>(host.size())}));
  be_.copy_from_host(t.data(), host.data(), host.size() * sizeof(int32_t));
  return static_cast<int32_t*>(t.data());
}

float* Buffers::zeros(size_t n) {
  Tensor& t = keep_.emplace_back(be_.alloc(DType::f32, {static_cast<int64_t>(n)}));
  return t.data_as<float>();
}

OpOutput Buffers::values(std::initializer_list<Region> regions) {
  OpOutput out;
  for (const Region& r : regions) {
    const std::vector<float> v = download(r.p, r.n);
    out.values.insert(out.values.end(), v.begin(), v.end());
  }
  return out;
}

std::vector<float> uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = lo + (hi - lo) * (static_cast<float>(x >> 8) / 16777216.0f);
  }
  return v;
}

}  // namespace sb::invariance
