// open_source: the DataConfig's source for a split. Each file source checks its own format; here
// only the choice and the config values that all of them share.
#include "samebits/data/hdf5_tokens.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/data/text_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::data {

const char* split_name(Split split) { return split == Split::train ? "train" : "validation"; }

std::unique_ptr<TokenSource> open_source(const DataConfig& config, Split split, const Hdf5Decoder& decode_hdf5) {
  SB_CHECK(config.vocab >= 1 && uint64_t(config.vocab) <= kMaxVocab, "model.vocab=", config.vocab,
           " is outside [1, 2^31]");
  const uint64_t vocab = uint64_t(config.vocab);
  if (config.source == "synthetic") {
    return std::make_unique<SyntheticLanguage>(config.synthetic, config.vocab, config.seed, split);
  }
  const std::string& path = split == Split::train ? config.path : config.val_path;
  SB_CHECK(!path.empty(), "data.source=", config.source, " needs data.", split == Split::train ? "path" : "val_path",
           " (the ", split_name(split), " data)");
  if (config.source == "shards") return std::make_unique<ShardFiles>(path, vocab);
  if (config.source == "text") return std::make_unique<TextFile>(path, vocab);
  if (config.source == "hdf5") return std::make_unique<Hdf5Tokens>(path, vocab, decode_hdf5);
  SB_FAIL("data.source='", config.source, "' is not a source; use synthetic, shards, text or hdf5");
}

}  // namespace sb::data
