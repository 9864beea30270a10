// The data a run file records against the data here (docs/FORMAT.md "Data provenance"): what
// verify reports as a difference before it trains a step, and what stops train --resume.
#pragma once
#include <string>
#include <vector>

#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"

namespace sb::cli {

// One line per data file that differs between the run file (`info`, read from `path`) and the
// files `config` names here; empty when they are the same or the file records no data manifest.
std::vector<std::string> data_differences(const std::string& path, const run::RunInfo& info,
                                          const std::string& manifest_here);
std::vector<std::string> data_differences(const std::string& path, const run::RunInfo& info, const Config& config);

// Throws sb::Error naming every differing file when the run at `path` records other data than
// `manifest_here` (train --resume).
void check_same_data(const std::string& path, const std::string& manifest_here);

}  // namespace sb::cli
