// data_manifest.hpp: the files each source reads (the shard glob's matches, the text file, the
// HDF5 file of FILE.h5:/dataset), their digests, the manifest's text form and the comparison.
#include "samebits/data/data_manifest.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "mapped_file.hpp"
#include "samebits/data/file_digest.hpp"
#include "samebits/data/hdf5_tokens.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"

namespace sb::data {
namespace {

constexpr uint64_t kSyntheticSample = 65536;  // tokens of a generated stream that its digest covers

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

// A generated stream: its parameters and its first tokens (a change of the generator shows too).
DataFile synthetic_record(const DataConfig& c, Split split) {
  const SyntheticConfig& s = c.synthetic;
  std::ostringstream text;
  text.precision(17);
  text << "synthetic v1 seed=" << c.seed << " vocab=" << c.vocab << " doc_len=" << s.doc_len << " mix=" << s.mix_markov
       << "," << s.mix_grammar << "," << s.mix_mark << "," << s.mix_recall << " markov_run=" << s.markov_run
       << " span=" << s.span_min << "," << s.span_max << " max_depth=" << s.max_depth << " split=" << split_name(split);
  const SyntheticLanguage language(s, c.vocab, c.seed, split);
  std::vector<int32_t> tokens(kSyntheticSample);  // (sample,)
  language.read(0, tokens.size(), tokens.data());
  const std::string t = text.str();
  const uint64_t parts[2] = {XXH3_64bits(t.data(), t.size()), XXH3_64bits(tokens.data(), tokens.size() * 4)};
  return {split_name(split), std::string("synthetic:") + split_name(split), 0, XXH3_64bits(parts, sizeof parts)};
}

void add_files(const DataConfig& c, Split split, std::vector<DataFile>& out) {
  const std::string& spec = split == Split::train ? c.path : c.val_path;
  std::vector<std::string> files;
  if (c.source == "shards") files = glob_files(spec, "shards");
  else if (c.source == "hdf5") files = {split_hdf5_path(spec).first};
  else files = {spec};
  for (const std::string& f : files) {
    const FileDigest d = file_digest(f);
    out.push_back({split_name(split), f, d.bytes, d.digest});
  }
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<DataFile> data_manifest(const DataConfig& config) {
  std::vector<DataFile> out;
  if (config.source == "synthetic") {
    out.push_back(synthetic_record(config, Split::train));
    out.push_back(synthetic_record(config, Split::validation));
    return out;
  }
  add_files(config, Split::train, out);
  if (!config.val_path.empty()) add_files(config, Split::validation, out);
  return out;
}

std::string manifest_text(const std::vector<DataFile>& files) {
  std::string s;
  for (const DataFile& f : files) {
    SB_CHECK(f.path.find_first_of("\t\n") == std::string::npos, "data file '", f.path,
             "': a path with a tab or a newline cannot be recorded");
    s += f.role + "\t" + std::to_string(f.bytes) + "\t" + hex(f.digest) + "\t" + f.path + "\n";
  }
  return s;
}

std::vector<DataFile> parse_manifest(const std::string& text, const std::string& where) {
  std::vector<DataFile> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    DataFile f;
    std::istringstream s(line);
    std::string bytes, digest;
    const bool fields = std::getline(s, f.role, '\t') && std::getline(s, bytes, '\t') &&
                        std::getline(s, digest, '\t') && std::getline(s, f.path) && !f.path.empty();
    const auto number = [](const std::string& t, int base, uint64_t& v) {
      char* end = nullptr;
      v = std::strtoull(t.c_str(), &end, base);
      return !t.empty() && t.size() <= 20 && end == t.c_str() + t.size() && t.find_first_of("+- ") == std::string::npos;
    };
    SB_CHECK(fields && (f.role == "train" || f.role == "validation") && number(bytes, 10, f.bytes) &&
                 digest.size() == 16 && number(digest, 16, f.digest),
             where, ": line ", n, " of the data manifest is not 'role<TAB>bytes<TAB>digest<TAB>path'");
    out.push_back(f);
  }
  return out;
}

std::vector<std::string> manifest_differences(const std::vector<DataFile>& recorded,
                                              const std::vector<DataFile>& here) {
  std::vector<std::string> out;
  std::map<std::pair<std::string, std::string>, const DataFile*> now;
  for (const DataFile& f : here) now[{f.role, f.path}] = &f;
  for (const DataFile& r : recorded) {
    const auto it = now.find({r.role, r.path});
    const std::string name = base_name(r.path) + " (" + r.role + ", " + r.path + ")";
    if (it == now.end()) {
      out.push_back(name + ": recorded (" + std::to_string(r.bytes) + " bytes, digest " + hex(r.digest) +
                    "), not part of the data here");
      continue;
    }
    const DataFile& h = *it->second;
    now.erase(it);
    if (h.digest == r.digest && h.bytes == r.bytes) continue;
    out.push_back(name + ": digest " + hex(r.digest) + " recorded, " + hex(h.digest) + " here; " +
                  (h.bytes == r.bytes
                       ? "sizes equal (" + std::to_string(h.bytes) + " bytes)"
                       : "size " + std::to_string(r.bytes) + " bytes recorded, " + std::to_string(h.bytes) + " here"));
  }
  for (const auto& [key, f] : now) {
    out.push_back(base_name(f->path) + " (" + f->role + ", " + f->path + "): here (" + std::to_string(f->bytes) +
                  " bytes), not recorded");
  }
  return out;
}

}  // namespace sb::data
