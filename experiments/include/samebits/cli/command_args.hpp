// The command line of a command with its own options (claims, pack, verify --budget): Boost's
// program_options with the command's table, the positional arguments collected, and optionally
// the run.* options (--run.threads 2, --run.threads=2) set aside for the re-runs they configure.
#pragma once
#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace sb::cli {

// Parses `args` against `table`; the positional arguments go to `positional`. run_overrides not
// null: every --run.KEY [VALUE] goes there instead. A bad option is an sb::Error ending with
// " (<hint>)".
boost::program_options::variables_map parse_command_args(const std::vector<std::string>& args,
                                                         boost::program_options::options_description table,
                                                         std::vector<std::string>& positional,
                                                         std::vector<std::string>* run_overrides, const char* hint);

}  // namespace sb::cli
