// The one registry of configuration options (Boost.Program_options): every key of sb::Config with
// its type and help, read from INI files ([section] key = value) and from the command line
// (--section.key VALUE or --section.key=VALUE). The command line wins over the file; defaults are
// the sb::Config member initialisers. Unknown keys, wrong types and invalid values are sb::Error
// naming the key (and the closest known key, the value, and the file where one was read).
#pragma once
#include <string>
#include <vector>

#include "samebits/core/config.hpp"

namespace sb::cli {

// One registry entry, as shown by --help and docs/CONFIG.md.
struct OptionInfo {
  std::string key;           // "optim.lr"
  std::string value_name;    // "FLOAT", "INT", "BOOL", "STRING", "muon|adamw", "INT,…"
  std::string default_text;  // the default as written in an INI file ("" = empty)
  std::string help;          // one sentence or two
};

// Every option, grouped by section in the order model, data, optim, train, numerics, run.
std::vector<OptionInfo> option_table();

// The resolved, validated configuration: defaults, then the INI file at ini_path (skipped when
// empty), then cli_overrides (tokens such as {"--optim.lr", "0.01", "--train.steps=5"}). The
// numerics switches not given explicitly follow numerics.mode (see NumericsConfig).
Config parse_config(const std::string& ini_path, const std::vector<std::string>& cli_overrides);

// The options grouped by section, with value type, default and help: `samebits train --help`.
std::string options_help();

// The option reference of docs/CONFIG.md (a Markdown table per section), generated from the
// registry; a unit test keeps the document equal to it.
std::string options_markdown();

}  // namespace sb::cli
