// A 1-D integer HDF5 dataset of token ids ("FILE.h5:/dataset"), read into memory at open (4 bytes a
// token) and checked there: every id in [0, vocab). Integer conversion only, so exact everywhere.
// For data larger than memory, use shard files. The decode (HDF5 on the file's metadata) is given
// to the constructor: samebits runs it in a reader process (io::isolated_hdf5_decoder(), a layer
// above), since token files are the files most likely to come from someone else.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "samebits/data/token_source.hpp"

namespace sb::data {

// "data/tok.h5:/train/tokens" -> {"data/tok.h5", "/train/tokens"} (split at the last ":/").
std::pair<std::string, std::string> split_hdf5_path(const std::string& spec);

// The tokens of the 1-D integer dataset `dataset` of `file`, each checked to be in [0, vocab), read
// in this process. HDF5's decoders run on the file's metadata here: a damaged or crafted file can
// crash or corrupt the calling process, so samebits calls it only inside its reader process.
std::vector<int32_t> decode_hdf5_tokens(const std::string& file, const std::string& dataset, uint64_t vocab);

class Hdf5Tokens final : public TokenSource {
 public:
  // The tokens `decode` returns, checked again here (the decoder may be another process's answer).
  Hdf5Tokens(const std::string& spec, uint64_t vocab, const Hdf5Decoder& decode);

  uint64_t size() const override { return tokens_.size(); }
  uint64_t vocab() const override { return vocab_; }
  std::string describe() const override;
  void read(uint64_t pos, uint64_t len, int32_t* out) const override;

 private:
  std::string file_, dataset_;
  uint64_t vocab_;
  std::vector<int32_t> tokens_;  // (size,)
};

}  // namespace sb::data
