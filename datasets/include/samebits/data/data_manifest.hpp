// The data a run trains on, as its run file records it (docs/FORMAT.md "Data provenance"): one
// record per file of the training and validation sources — its path, size and content digest — and
// for the synthetic language one per stream, a digest of its parameters and first tokens. verify
// and train --resume compare the recorded manifest with the files here before the first step.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/data/token_source.hpp"

namespace sb::data {

struct DataFile {
  std::string role;     // "train" or "validation"
  std::string path;     // as the config's glob matched it; "synthetic:train" for the generated streams
  uint64_t bytes = 0;   // the file's size; 0 for a generated stream
  uint64_t digest = 0;  // XXH3-64 of the content (file_digest.hpp); generated: of parameters and first tokens
  bool operator==(const DataFile&) const = default;
};

// The records of `config`'s training data and, when it has any, its validation data (file
// digests through the cache of file_digest.hpp). An sb::Error names a file that cannot be read.
std::vector<DataFile> data_manifest(const DataConfig& config);

// One line per record: "role<TAB>bytes<TAB>digest (16 hex)<TAB>path"; parse_manifest reads it back
// (an sb::Error naming `where` for a malformed line).
std::string manifest_text(const std::vector<DataFile>& files);
std::vector<DataFile> parse_manifest(const std::string& text, const std::string& where);

// How `here` differs from `recorded`, one line per file that differs, is missing or is new, e.g.
// "fineweb_train_000003.bin: digest 1c… recorded, 9a… here; sizes equal". Empty: the same data.
std::vector<std::string> manifest_differences(const std::vector<DataFile>& recorded, const std::vector<DataFile>& here);

}  // namespace sb::data
