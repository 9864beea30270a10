// `samebits pack RUN.h5 [RUN.h5 …] OUT/ [--claims CLAIMS.ini] [--gpu-factor F]` (docs/ARTIFACTS.md):
// the artifact as a folder an evaluator downloads — each finished run file with its kept states,
// snapshots and final state (a finished run keeps nothing else), its resolved config and data
// manifest, the claims file with the reports it cites, and a generated EVALUATE.md with the
// commands and each one's expected time on a 2-core CPU. verify and claims check work on the
// folder as it is, wherever it is copied.
#pragma once
#include <string>
#include <vector>

namespace sb::cli {

struct PackOptions {
  std::vector<std::string> runs;  // run files (finished)
  std::string out;                // a folder that does not exist or is empty
  std::string claims;             // a claims file ("" : none); its runs must be among `runs`
  double gpu_factor = 100;        // a 2-core CPU's step time / the GPU's, for runs trained on a GPU
};

struct PackResult {
  std::vector<std::string> files;  // written, relative to out
  uint64_t bytes = 0;
};

// Copies, checks every copy's seal against the run file's index, writes EVALUATE.md. Throws
// sb::Error naming the run or file that cannot be packed.
PackResult pack_runs(const PackOptions& options);

// The run file verify reads for `path`: `path` itself, or for a packed folder (or its runs/) the one
// run file in its runs/ folder (an error listing them when there are several).
std::string packed_run_path(const std::string& path);

}  // namespace sb::cli
