// data_provenance.hpp: the recorded manifest parsed (text from a file: printed escaped) and
// compared record by record with the one computed here.
#include "samebits/cli/data_provenance.hpp"

#include "samebits/core/untrusted_text.hpp"
#include "samebits/data/data_manifest.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {

std::vector<std::string> data_differences(const std::string& path, const run::RunInfo& info,
                                          const std::string& manifest_here) {
  if (info.data_files.empty()) return {};
  const auto recorded = data::parse_manifest(info.data_files, path + ": attribute data_files");
  std::vector<std::string> out;
  for (const std::string& line : data::manifest_differences(recorded, data::parse_manifest(manifest_here, "here"))) {
    out.push_back(escape_untrusted(line));
  }
  return out;
}

std::vector<std::string> data_differences(const std::string& path, const run::RunInfo& info, const Config& config) {
  if (info.data_files.empty()) return {};
  return data_differences(path, info, data::manifest_text(data::data_manifest(to_data_config(config))));
}

void check_same_data(const std::string& path, const std::string& manifest_here) {
  const auto lines = data_differences(path, run::RunReader::open(path).info(), manifest_here);
  if (lines.empty()) return;
  std::string text;
  for (const std::string& l : lines) text += "\n  " + l;
  SB_FAIL("cannot resume '", path,
          "': its data differ from the data it was trained on (docs/FORMAT.md, data "
          "provenance):",
          text);
}

}  // namespace sb::cli
