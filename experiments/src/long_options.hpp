// Internal to experiments/src: the one way samebits reads a command line with Boost.Program_options
// (the config's --section.key options in options.cpp, each command's own in arguments.cpp).
#pragma once
#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace sb::cli {

// Long options only (--key VALUE, --key=VALUE), no abbreviations and no short options (so "-0.1"
// is a value), unknown options kept as unregistered for the caller. A Boost error becomes an
// sb::Error "<what>: <Boost's message, escaped><suffix>".
boost::program_options::parsed_options parse_long_options(const std::vector<std::string>& args,
                                                          const boost::program_options::options_description& desc,
                                                          const std::string& what, const std::string& suffix = "");

}  // namespace sb::cli
