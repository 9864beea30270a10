// Reading a run file for people and for the commands that re-run it: `samebits inspect` (what
// the run is, its status, steps, last loss, snapshots and checkpoints) and the recorded
// configuration parsed back and checked against the file (experiment id, tensor layout, steps).
#pragma once
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"

namespace sb::cli {

// A run file's recorded INI text parsed (parse_config_text), then cli_overrides; messages call it
// "the recorded config".
Config config_from_text(const std::string& ini_text, const std::vector<std::string>& cli_overrides);

// The run's resolved configuration (its `config` attribute, then cli_overrides), checked to be the
// run's experiment: its experiment id, tensor layout and step count must be the file's. Throws
// sb::Error naming the difference (an edited file, or one from another samebits version).
Config recorded_config(const run::RunReader& run, const std::vector<std::string>& cli_overrides = {});

// True for a run of a program samebits cannot replay (samebits.torch.Recorder's: its backend line
// names torch); its config is the Recorder's texts, not a samebits config.
bool recorded_program(const run::RunReader& run);

// The text `samebits inspect` prints: run, experiment, status, steps, losses, final state,
// snapshots, checkpoint files (each checked), execution, build, host and sessions; for a recorded
// PyTorch program its declared experiment, model and optimizer classes and torch's configuration.
std::string describe_run(const run::RunReader& run);

}  // namespace sb::cli
