// The catalog's training-step axes (docs/INVARIANCE.md): step 2 of two tiny GPTs traced through a
// TracingBackend (samebits trace's replay, experiments/include/samebits/cli/trace.hpp) on 1 rank,
// and again on 2, 3 and 4 simulated ranks (the exact all-reduce over a ThreadWorld) and with the
// leaves in micro-batches of 1 and 2; every row of each op compared bit for bit with the
// one-process stream.
#pragma once
#include <map>
#include <string>

namespace sb::invariance {

struct StreamCells {
  std::map<std::string, std::string> world, micro;  // catalog row → cell
};
StreamCells stream_cells();

// "max 236760 ULP, 90.9 % of 4096 differ" (or "NaN differs" when a NaN is involved).
std::string distance_text(uint64_t max_ulp, uint64_t differing, uint64_t numel);

}  // namespace sb::invariance
