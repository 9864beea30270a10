// Token shard files in the llm.c / nanoGPT .bin format: a header of 256 little-endian int32 (magic
// 20240520, version 1 = uint16 tokens or 2 = uint32 tokens, token count), then the tokens. ShardFiles
// maps every file a glob matches and reads them as one stream (files in sorted order); the bytes
// are the tokens, so reads are exact and the same everywhere.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "samebits/data/token_source.hpp"

namespace sb::data {

constexpr int32_t kShardMagic = 20240520;
constexpr int kShardHeaderInts = 256;
constexpr uint64_t kShardHeaderBytes = kShardHeaderInts * 4;

struct ShardInfo {
  std::string path;
  int version = 0;      // 1: uint16 tokens, 2: uint32 tokens
  uint64_t tokens = 0;  // from the header, checked against the file size
};

// The header of one shard, validated against the file size. Throws sb::Error naming the file and
// what was wrong (missing, short header, magic, version, count disagreeing with the size).
ShardInfo read_shard_header(const std::string& path);

class MappedFile;

class ShardFiles final : public TokenSource {
 public:
  // All files matching `pattern` (a path or a glob), concatenated in sorted order; tokens >= vocab
  // are reported when read.
  ShardFiles(const std::string& pattern, uint64_t vocab);
  ~ShardFiles() override;

  uint64_t size() const override { return total_; }
  uint64_t vocab() const override { return vocab_; }
  std::string describe() const override;
  void read(uint64_t pos, uint64_t len, int32_t* out) const override;

  const std::vector<ShardInfo>& shards() const { return info_; }

 private:
  std::string pattern_;
  uint64_t vocab_;
  std::vector<ShardInfo> info_;
  std::vector<MappedFile> maps_;
  std::vector<uint64_t> starts_;  // (files + 1,) first stream position of each file, then the total
  uint64_t total_ = 0;
};

// Writes a shard atomically: tokens go to PATH.tmp, which replaces PATH on finish(); a writer
// destroyed before finish() removes the temporary file, so PATH is never left half-written.
class ShardWriter {
 public:
  ShardWriter(const std::string& path, int version);  // version 1 (uint16) or 2 (uint32)
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void append(const int32_t* tokens, uint64_t n);  // tokens (n,), each in the version's range
  void finish();

 private:
  std::string path_, tmp_;
  int version_;
  std::FILE* file_ = nullptr;
  uint64_t count_ = 0;
  std::vector<uint8_t> buffer_;
};

}  // namespace sb::data
