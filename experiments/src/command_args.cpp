// command_args.hpp: run.* options split off first (their value is the next token unless given
// with '='), then the command's table and the positional "args".
#include "samebits/cli/command_args.hpp"

#include "samebits/det/error.hpp"

namespace sb::cli {

namespace po = boost::program_options;

po::variables_map parse_command_args(const std::vector<std::string>& args, po::options_description table,
                                     std::vector<std::string>& positional, std::vector<std::string>* run_overrides,
                                     const char* hint) {
  std::vector<std::string> own;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (run_overrides == nullptr || args[i].rfind("--run.", 0) != 0) {
      own.push_back(args[i]);
      continue;
    }
    run_overrides->push_back(args[i]);
    if (args[i].find('=') == std::string::npos && i + 1 < args.size()) run_overrides->push_back(args[++i]);
  }
  table.add_options()("args", po::value(&positional));
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(own).options(table).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    SB_FAIL(e.what(), " (", hint, ")");
  }
  return vm;
}

}  // namespace sb::cli
