// samebits.Config: a resolved, validated configuration, made by the command line's own parser
// (cli/options.hpp) from an INI file and overrides, so every key, default, validation and message
// is the CLI's. Overrides are {"section.key": value}; a value is written as the command line would
// take it: bool as true/false, a list or tuple comma-separated, anything else as str(value) (a
// float's repr is its shortest exact text).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/config_fields.hpp"
#include "samebits/det/error.hpp"

namespace sb::py {
namespace {

std::string value_text(const pyb::handle& v) {
  if (pyb::isinstance<pyb::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (pyb::isinstance<pyb::float_>(v)) return pyb::repr(v).cast<std::string>();
  if (pyb::isinstance<pyb::list>(v) || pyb::isinstance<pyb::tuple>(v)) {
    std::string text;
    for (const pyb::handle item : v) text += (text.empty() ? "" : ",") + value_text(item);
    return text;
  }
  return pyb::str(v).cast<std::string>();
}

std::vector<std::string> override_tokens(const pyb::object& overrides) {
  std::vector<std::string> tokens;
  if (overrides.is_none()) return tokens;
  for (const auto& [key, value] : overrides.cast<pyb::dict>())
    tokens.push_back("--" + pyb::str(key).cast<std::string>() + "=" + value_text(value));
  return tokens;
}

// The value of `key` ("section.key") as the resolved INI text writes it (its field's text).
std::string value_of(const Config& c, const std::string& key) {
  SB_CHECK(key.find('.') != std::string::npos, "config key '", key,
           "': keys are written section.key, e.g. train.steps");
  const ConfigField* field = find_config_field(key);
  SB_CHECK(field != nullptr, "unknown config key '", key, "' (samebits train --help lists every key)");
  SB_CHECK(!field->is_alias(), "config key '", key, "' is an alias of ", field->alias_of, ", which holds its value");
  return field->text(c);
}

// Every key the resolved INI text writes, in its order (the aliases, which it never writes, left out).
std::vector<std::string> keys() {
  std::vector<std::string> out;
  for (const ConfigField& f : config_fields())
    if (!f.is_alias()) out.push_back(f.key);
  return out;
}

}  // namespace

void bind_config(pyb::module_& m) {
  pyb::class_<Config>(m, "Config",
                      "A resolved, validated samebits configuration (the command line's parser and messages).")
      .def_static(
          "from_ini",
          [](const pyb::object& path, const pyb::object& overrides) {
            const std::string file = path.is_none() ? std::string() : pyb::str(path).cast<std::string>();
            return cli::parse_config(file, override_tokens(overrides));
          },
          pyb::arg("path") = pyb::none(), pyb::arg("overrides") = pyb::none(),
          "Defaults, then the INI file at `path` (None: none), then `overrides` {'section.key': value}.")
      .def_static(
          "from_text",
          [](const std::string& text, const pyb::object& overrides) {
            return cli::parse_config_text(text, "the config text", override_tokens(overrides));
          },
          pyb::arg("text"), pyb::arg("overrides") = pyb::none(), "The same from INI text held in memory.")
      .def(
          "replace",
          [](const Config& c, const pyb::object& overrides) {
            return cli::parse_config_text(to_ini_text(c), "the config", override_tokens(overrides));
          },
          pyb::arg("overrides"), "A copy with `overrides` applied (validated again).")
      .def("__getitem__", &value_of, pyb::arg("key"), "The value of 'section.key' as the resolved INI writes it.")
      .def_static("keys", &keys, "Every key, in the resolved INI text's order (samebits train --help).")
      .def_property_readonly("text", &to_ini_text, "The fully resolved configuration as INI text.")
      .def_property_readonly("experiment_id", &experiment_id, "XXH3-64 of the experiment's canonical text.")
      .def_property_readonly("experiment_text", &experiment_text)
      .def_property_readonly("run_path", &run_path, "run.out, or runs/<experiment id>.h5")
      .def("__eq__", [](const Config& a, const Config& b) { return a == b; })
      .def("__repr__", [](const Config& c) { return "<samebits.Config experiment " + experiment_id(c) + ">"; });
}

}  // namespace sb::py
