// The one table of configuration fields (rows in core/train/config_fields.cpp): each key of
// sb::Config with its struct member, value type, help and whether it belongs to the experiment;
// the default is the member's initialiser. It drives the INI and command-line reader
// (experiments/src/options.cpp), to_ini_text and experiment_text (config.cpp), --help and
// docs/CONFIG.md. Contract: a row's text is a pure function of the member's value, and the
// experiment rule decides alone whether experiment_text (hence the experiment id) holds the key.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/config.hpp"

namespace sb {

// A value text that does not parse: `expected` says what was expected ("an integer such as 4");
// the reader adds the key, the value and where it was read.
struct BadConfigValue {
  std::string expected;
};

// Whether a field is part of the experiment: always, never (execution and recording keys), or
// only when `holds` (a key that cannot act otherwise, or one added later that is written only
// away from its default so the experiments that existed before it keep their ids).
struct ExperimentRule {
  enum class Kind { always, never, when };
  Kind kind = Kind::always;
  std::string_view condition;              // `when`: the condition in words, for docs/CONFIG.md
  bool (*holds)(const Config&) = nullptr;  // `when`: true where the field is in the experiment

  bool includes(const Config& c) const { return kind == Kind::always || (kind == Kind::when && holds(c)); }
  std::string describe() const;  // "yes", "no" or "when <condition>"
};

struct ConfigField {
  std::string key;         // "optim.lr": `lr` in [optim] of an INI file, --optim.lr on the command line
  std::string value_name;  // "FLOAT", "INT", "BOOL", "STRING", "FLOAT,FLOAT", "INT,…", "muon|adamw|normuon"
  std::string help;        // one sentence or two
  ExperimentRule experiment;
  std::string default_note;  // replaces the default in --help where it depends on another key
  std::string alias_of;      // an alias sets this key's member and is never written (optim.adjust_lr_fn)
  std::function<std::string(const Config&)> text;      // the member as INI text; empty for an alias
  std::function<void(Config&, std::string_view)> set;  // parses into the member; throws BadConfigValue

  bool is_alias() const { return !alias_of.empty(); }
  std::string_view section() const { return std::string_view(key).substr(0, key.find('.')); }
  std::string_view name() const { return std::string_view(key).substr(key.find('.') + 1); }
  // The default as an INI file writes it (the text of Config{}), or default_note where set.
  std::string default_text() const;
};

struct ConfigSection {
  std::string_view name;   // "optim"
  std::string_view title;  // one line for --help and docs/CONFIG.md
};

// The sections in the order of to_ini_text: model, data, optim, train, perturb, numerics, run.
const std::vector<ConfigSection>& config_sections();

// Every field, grouped by section in that order and in to_ini_text's order within a section. The
// reader applies given values in this order (numerics.mode before the switches it presets).
const std::vector<ConfigField>& config_fields();

// The field of `key` ("optim.lr"), or nullptr.
const ConfigField* find_config_field(std::string_view key);

}  // namespace sb
