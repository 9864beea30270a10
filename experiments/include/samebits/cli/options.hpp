// The configuration read from INI text ([section] key = value) and from the command line
// (--section.key VALUE or --section.key=VALUE), key by key as the table of config_fields.hpp says.
// The command line wins over the file; defaults are the sb::Config member initialisers. Unknown
// keys, wrong types and invalid values are sb::Error naming the key (and the closest known key,
// the value, and the file where one was read).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/config.hpp"

namespace sb::cli {

// The resolved, validated configuration: defaults, then the INI file at ini_path (skipped when
// empty), then cli_overrides (tokens such as {"--optim.lr", "0.01", "--train.steps=5"}). The
// numerics switches not given explicitly follow numerics.mode (see NumericsConfig). Messages name
// the file: "config train.steps='many' in a.ini is not valid: …".
Config parse_config(const std::string& ini_path, const std::vector<std::string>& cli_overrides);

// parse_config of INI text held in memory (a run file's recorded config); messages call it
// `source`: "unknown config key 'optim.lrr' in the recorded config".
Config parse_config_text(std::string_view ini_text, const std::string& source,
                         const std::vector<std::string>& cli_overrides);

// The options grouped by section, with value type, default and help: `samebits train --help`.
std::string options_help();

// The option reference of docs/CONFIG.md (a Markdown table per section), generated from the
// table; a unit test keeps the document equal to it.
std::string options_markdown();

}  // namespace sb::cli
