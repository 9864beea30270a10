// A 1-D integer HDF5 dataset of token ids ("FILE.h5:/dataset"), read into memory at open (4 bytes a
// token) and checked there: every id in [0, vocab). Integer conversion only, so exact everywhere.
// For data larger than memory, use shard files.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "samebits/data/token_source.hpp"

namespace sb::data {

// "data/tok.h5:/train/tokens" -> {"data/tok.h5", "/train/tokens"} (split at the last ":/").
std::pair<std::string, std::string> split_hdf5_path(const std::string& spec);

class Hdf5Tokens final : public TokenSource {
 public:
  Hdf5Tokens(const std::string& spec, uint64_t vocab);

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
