// Verifying a run file on this machine (`samebits verify`, the artifact evaluator's command): the
// recorded experiment is re-run from the file's resolved config, and after every step each
// experiment column of /series (fingerprints of every tensor's parameters and gradient, loss,
// validation loss, statistics) is compared bit for bit with the file. The first mismatch is
// reported with step, columns and tensors, and — where the file holds the parameters of that step
// (snapshot, state, final state) — the first differing element, both values and their ULP
// distance. With `from` the re-run starts at a state the run's store keeps (train.keep_states):
// steps from+1 … from+N are checked without replaying the steps before.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sb::cli {

struct VerifyOptions {
  int64_t from = 0;                    // start from the stored state of this step (0: the initialisation)
  int64_t steps = 0;                   // steps to check; 0: every recorded step after `from`
  std::vector<std::string> overrides;  // run.* options only (--run.threads 4): how, not what, to run
};

struct TensorFingerprint {
  std::string tensor;
  uint64_t recorded = 0, computed = 0;
};

// One parameter element that differs between the file and the re-run.
struct ElementMismatch {
  std::string tensor;
  std::vector<int64_t> index;           // (row, col) or (i)
  uint32_t recorded = 0, computed = 0;  // fp32 encodings
  uint64_t ulp = 0;                     // diff.hpp ulp_distance
};

struct VerifyMismatch {
  int64_t step = 0;                       // 0: the initial parameters (snapshot of step 0)
  std::vector<std::string> columns;       // differing series columns at that step
  std::vector<TensorFingerprint> params;  // tensors whose parameter fingerprint differs
  std::vector<TensorFingerprint> grads;   // … gradient fingerprint
  std::optional<ElementMismatch> element;
  std::string note;  // where the element came from, or why there is none
};

struct VerifyResult {
  int64_t from = 0;  // the step the re-run started after
  int64_t steps_checked = 0;
  std::vector<std::string> warnings;  // e.g. another samebits version wrote the file
  std::optional<VerifyMismatch> mismatch;
  // Data files that differ from those the run recorded (data_provenance.hpp): found before the
  // first step, which is then not run.
  std::vector<std::string> data_differences;
  bool reproduced() const { return !mismatch && data_differences.empty(); }
};

// Throws sb::Error unless every option among `overrides` is a run.* option (how to run, never
// what): a re-run changes nothing of the recorded experiment.
void check_run_overrides(const std::vector<std::string>& overrides);

// Throws sb::Error when the file cannot be verified (damaged, config not usable, options).
VerifyResult verify_run(const std::string& path, const VerifyOptions& options, std::ostream& log);

// The report `samebits verify` prints.
std::string verify_text(const std::string& path, const VerifyResult& r);

}  // namespace sb::cli
