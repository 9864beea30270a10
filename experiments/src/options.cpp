// The INI and command-line reader of the configuration table (core config_fields.hpp): Boost's
// program_options splits an INI text and the command line into key = value pairs, and each
// table row parses its value, with errors that name the key, the value and where it was read.
// Text read from a file or a run file reaches messages escaped (untrusted_text.hpp).
#include "samebits/cli/options.hpp"

#include "long_options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "samebits/core/config_fields.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace po = boost::program_options;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean optim.lr?)" when a known key is close to `key`, else "".
std::string suggestion(const std::string& key, const std::string& prefix) {
  const std::string leaf = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
  const ConfigField* best = nullptr;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const ConfigField& f : config_fields()) {
    const std::string f_leaf(f.name());
    const std::size_t d = std::min(edit_distance(key, f.key), f_leaf == leaf ? 1 : edit_distance(leaf, f_leaf) + 2);
    if (d < best_distance) {
      best = &f;
      best_distance = d;
    }
  }
  return best ? " (did you mean " + prefix + best->key + "?)" : "";
}

// Where a value came from, for messages.
struct Given {
  std::string value;
  std::string origin;  // "in FILE", "in the recorded config" or "on the command line"
};

// Collects key → value from one source; unknown and repeated keys are errors.
void collect(const po::parsed_options& parsed, const std::string& origin, bool command_line,
             std::map<std::string, Given>& out) {
  const std::string prefix = command_line ? "--" : "";
  std::map<std::string, bool> seen;
  for (const auto& opt : parsed.options) {
    if (opt.position_key >= 0) {
      SB_FAIL("unexpected argument '", escape_untrusted(opt.value.empty() ? "" : opt.value.front()), "' ", origin,
              "; options are written --section.key VALUE (samebits train --help lists them)");
    }
    if (opt.unregistered || find_config_field(opt.string_key) == nullptr) {
      SB_FAIL("unknown config key '", prefix, escape_untrusted(opt.string_key), "' ", origin,
              suggestion(opt.string_key, prefix), "; samebits train --help lists the options");
    }
    SB_CHECK(!seen[opt.string_key], "config key ", opt.string_key, " is given twice ", origin, "; keep one");
    seen[opt.string_key] = true;
    SB_CHECK(opt.value.size() == 1, "config key ", opt.string_key, " ", origin, " needs one value");
    SB_CHECK(!command_line || opt.value.front().rfind("--", 0) != 0, "config key --", opt.string_key,
             " has no value on the command line (it is followed by '", escape_untrusted(opt.value.front()), "')");
    out[opt.string_key] = Given{opt.value.front(), origin};
  }
}

po::options_description boost_description() {
  po::options_description desc;
  for (const ConfigField& f : config_fields()) {
    desc.add_options()(f.key.c_str(), po::value<std::string>());
  }
  return desc;
}

// INI text and what messages call it.
struct Source {
  std::string_view text;
  std::string origin;  // "in experiments/configs/default.ini"
  std::string title;   // "config file 'experiments/configs/default.ini'"
};

void read_ini(const Source& source, const po::options_description& desc, std::map<std::string, Given>& values) {
  std::istringstream in{std::string(source.text)};
  po::parsed_options parsed(&desc);
  try {
    parsed = po::parse_config_file(in, desc, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    SB_FAIL(source.title, ": ", escape_untrusted(e.what()));
  }
  collect(parsed, source.origin, false, values);
}

void read_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                       std::map<std::string, Given>& values) {
  collect(parse_long_options(args, desc, "command line"), "on the command line", true, values);
}

Config resolve(const Source* source, const std::vector<std::string>& cli_overrides) {
  const po::options_description desc = boost_description();
  std::map<std::string, Given> from_file;
  std::map<std::string, Given> from_command_line;
  if (source != nullptr) read_ini(*source, desc, from_file);
  read_command_line(cli_overrides, desc, from_command_line);

  Config config;
  for (const ConfigField& f : config_fields()) {  // table order: numerics.mode before its switches
    const auto on_command_line = from_command_line.find(f.key);
    const auto in_file = from_file.find(f.key);
    const Given* given = on_command_line != from_command_line.end() ? &on_command_line->second
                         : in_file != from_file.end()               ? &in_file->second
                                                                    : nullptr;
    if (given == nullptr) continue;
    try {
      f.set(config, given->value);
    } catch (const BadConfigValue& bad) {
      SB_FAIL("config ", f.key, "='", escape_untrusted(given->value), "' ", given->origin, " is not valid: expected ",
              bad.expected);
    }
  }
  // train.init enters the experiment by content: hash its file unless the digest is given at the
  // same level or above (a run file's recorded config carries both).
  const bool init_on_command_line = from_command_line.count("train.init") != 0;
  const bool digest_given = from_command_line.count("train.init_digest") != 0 ||
                            (!init_on_command_line && from_file.count("train.init_digest") != 0);
  if (!config.train.init.empty() && !digest_given) {
    try {
      config.train.init_digest = io::file_digest(io::init_weights_file(config.train.init));
    } catch (const Error& e) {
      SB_FAIL("config train.init='", escape_untrusted(config.train.init), "': ", e.what());
    }
  }
  validate(config);
  return config;
}

bool in_section(const ConfigField& f, const ConfigSection& s) { return f.section() == s.name; }

std::string wrap(const std::string& text, std::size_t indent, std::size_t width) {
  std::istringstream words(text);
  std::string out(indent, ' ');
  std::size_t column = indent;
  std::string word;
  bool first = true;
  while (words >> word) {
    if (!first && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      first = true;
    }
    if (!first) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  return out + "\n";
}

}  // namespace

Config parse_config_text(std::string_view ini_text, const std::string& source,
                         const std::vector<std::string>& cli_overrides) {
  const Source text{ini_text, "in " + source, source};
  return resolve(&text, cli_overrides);
}

Config parse_config(const std::string& ini_path, const std::vector<std::string>& cli_overrides) {
  if (ini_path.empty()) return resolve(nullptr, cli_overrides);
  std::error_code ec;
  SB_CHECK(std::filesystem::exists(ini_path, ec), "config file '", ini_path, "' does not exist");
  SB_CHECK(std::filesystem::is_regular_file(ini_path, ec), "config file '", ini_path, "' is not a regular file");
  std::ifstream in(ini_path, std::ios::binary);
  SB_CHECK(in.good(), "config file '", ini_path, "' cannot be opened for reading (check its permissions)");
  std::ostringstream text;
  text << in.rdbuf();
  SB_CHECK(!in.bad(), "config file '", ini_path, "' cannot be read");
  const std::string contents = text.str();
  const Source file{contents, "in " + ini_path, "config file '" + ini_path + "'"};
  return resolve(&file, cli_overrides);
}

std::string options_help() {
  std::ostringstream out;
  out << "Configuration: an INI file ([section] then key = value; # starts a comment) and/or\n"
         "--section.key VALUE on the command line, which wins over the file. Lists are\n"
         "comma-separated; use --key=VALUE for values that start with '-'.\n";
  for (const ConfigSection& section : config_sections()) {
    out << "\n[" << section.name << "]  " << section.title << "\n";
    for (const ConfigField& f : config_fields()) {
      if (!in_section(f, section)) continue;
      std::string head = "  --" + f.key + " " + f.value_name;
      const std::string default_text = f.default_text();
      head += head.size() < 44 ? std::string(44 - head.size(), ' ') : std::string(" ");
      out << head << "default " << (default_text.empty() ? "(empty)" : default_text) << "\n" << wrap(f.help, 6, 100);
    }
  }
  return out.str();
}

std::string options_markdown() {
  std::ostringstream out;
  for (const ConfigSection& section : config_sections()) {
    out << "### [" << section.name << "] — " << section.title << "\n\n"
        << "| key | value | default | experiment | meaning |\n|---|---|---|---|---|\n";
    for (const ConfigField& f : config_fields()) {
      if (!in_section(f, section)) continue;
      std::string value_name = f.value_name;
      std::replace(value_name.begin(), value_name.end(), '|', '/');
      const std::string default_text = f.default_text();
      const std::string experiment = f.is_alias() ? "as `" + f.alias_of + "`" : f.experiment.describe();
      out << "| `" << f.key << "` | " << value_name << " | "
          << (default_text.empty() ? "(empty)" : "`" + default_text + "`") << " | " << experiment << " | " << f.help
          << " |\n";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace sb::cli
