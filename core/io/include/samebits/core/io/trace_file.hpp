// The trace file (docs/FORMAT.md §"Trace file"): the op-hash streams (trace.hpp) of the steps
// `samebits train --trace-steps` traced, beside the run file as RUN.trace.h5. Hashes, names,
// leaves and shapes only (no values); read back checked: a damaged file is an sb::Error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/trace.hpp"

namespace sb::io {

struct TracedStep {
  int64_t step = 0;              // 1-based
  std::vector<trace::Row> rows;  // in one process's order (trace::canonical_order)
};

// "runs/x.h5" → "runs/x.trace.h5".
std::string trace_file_path(const std::string& run_path);
// Writes every step's stream (a new file; an error when one exists at `path`). replayable: the
// run is samebits' own, whose steps `samebits trace` replays; false for streams recorded from a
// program samebits cannot replay (samebits.torch.Recorder: attribute replayable = 0).
void write_trace_file(const std::string& path, const std::string& experiment_id, const std::vector<TracedStep>& steps,
                      bool replayable = true);
std::vector<TracedStep> read_trace_file(const std::string& path, std::string* experiment_id = nullptr);
// False for a trace file written with replayable = false (true when the attribute is absent).
bool trace_file_replayable(const std::string& path);

}  // namespace sb::io
