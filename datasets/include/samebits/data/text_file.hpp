// A plain text file as byte-level tokens (token = byte value, vocabulary 256), memory-mapped.
// Tokens are the file's bytes: exact and the same everywhere.
#pragma once
#include <memory>
#include <string>

#include "samebits/data/token_source.hpp"

namespace sb::data {

class MappedFile;

class TextFile final : public TokenSource {
 public:
  // Bytes >= vocab (possible only when vocab < 256) are reported when read.
  TextFile(const std::string& path, uint64_t vocab);
  ~TextFile() override;

  uint64_t size() const override;
  uint64_t vocab() const override { return vocab_; }
  std::string describe() const override;
  void read(uint64_t pos, uint64_t len, int32_t* out) const override;

 private:
  std::unique_ptr<MappedFile> file_;
  uint64_t vocab_;
};

}  // namespace sb::data
