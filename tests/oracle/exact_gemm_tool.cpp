// The samebits side of the exact GEMM's integer oracle (exact_gemm_oracle.py): reads one product
// from a binary file — int32 m, n, k, ta, tb, accumulate, precision (0 fp32, 1 bf16, 2 fp16), then
// op(A) stored per ta, op(B) per tb and C (m, n), all float32 little-endian, densely packed — runs
// it under numerics.gemm=exact on the path SAMEBITS_ISA selects (or =canonical, =vendor when MODE
// says so: bench/exact_accuracy.py), and writes C (m·n float32).
// usage: exact_gemm_tool IN OUT [exact|canonical|vendor]
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/enum_names.hpp"
#include "samebits/det/error.hpp"

namespace {

template <class T>
void read(std::ifstream& in, T* out, size_t count, const char* what) {
  in.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(count * sizeof(T)));
  SB_CHECK(in.good(), "exact_gemm_tool: the input file ends inside ", what);
}

int run(const char* in_path, const char* out_path, sb::GemmMode mode) {
  std::ifstream in(in_path, std::ios::binary);
  SB_CHECK(in.good(), "exact_gemm_tool: cannot open ", in_path);
  int32_t h[7];
  read(in, h, 7, "the header");
  const int m = h[0], n = h[1], k = h[2];
  const sb::Trans ta = h[3] != 0 ? sb::Trans::yes : sb::Trans::no, tb = h[4] != 0 ? sb::Trans::yes : sb::Trans::no;
  SB_CHECK(m > 0 && n > 0 && k > 0 && h[6] >= 0 && h[6] <= 2, "exact_gemm_tool: bad header in ", in_path);
  const auto prec = static_cast<sb::Precision>(h[6]);
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(static_cast<size_t>(m) * n);
  read(in, a.data(), a.size(), "op(A)");
  read(in, b.data(), b.size(), "op(B)");
  read(in, c.data(), c.size(), "C");
  auto be = sb::make_cpu_backend({mode, sb::ReduceMode::canonical, prec});
  be->gemm({ta, tb, m, n, k, a.data(), ta == sb::Trans::no ? k : m, b.data(), tb == sb::Trans::no ? n : k, c.data(), n,
            h[5] != 0, prec});
  std::ofstream out(out_path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.size() * sizeof(float)));
  SB_CHECK(out.good(), "exact_gemm_tool: cannot write ", out_path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: exact_gemm_tool IN OUT [exact|canonical|vendor]\n";
    return 2;
  }
  try {
    const auto mode = argc == 4 ? sb::config_enum<sb::GemmMode>(argv[3]) : sb::GemmMode::exact;
    SB_CHECK(mode.has_value(), "exact_gemm_tool: MODE '", argv[3], "' is not exact, canonical or vendor");
    return run(argv[1], argv[2], *mode);
  } catch (const sb::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
