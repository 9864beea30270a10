// llm.c / nanoGPT token shards: header validation against the file size, the mapped multi-file
// stream (uint16 or uint32 tokens widened to int32, checked against the vocabulary), and the
// atomic shard writer. Little-endian hosts only, like the format.
#include "samebits/data/shards.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "mapped_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::data {

static_assert(std::endian::native == std::endian::little, "shard files are little-endian");

namespace {

ShardInfo check_shard(const MappedFile& file) {
  const std::string& path = file.path();
  SB_CHECK(file.size() >= kShardHeaderBytes, "shard '", path, "': ", file.size(),
           " bytes, shorter than the 1024-byte header (truncated, or not an llm.c .bin token file)");
  int32_t header[3];
  std::memcpy(header, file.data(), sizeof(header));
  SB_CHECK(header[0] == kShardMagic, "shard '", path, "': magic number ", header[0], ", expected ", kShardMagic,
           " (not an llm.c / nanoGPT .bin token file)");
  SB_CHECK(header[1] == 1 || header[1] == 2, "shard '", path, "': version ", header[1],
           ", expected 1 (uint16 tokens) or 2 (uint32 tokens)");
  SB_CHECK(header[2] >= 0, "shard '", path, "': negative token count ", header[2], " in the header");
  ShardInfo info{path, header[1], uint64_t(header[2])};
  const uint64_t expected = kShardHeaderBytes + info.tokens * (info.version == 1 ? 2 : 4);
  SB_CHECK(file.size() >= expected, "shard '", path, "' is truncated: the header says ", info.tokens, " tokens (",
           expected, " bytes with the header), the file has ", file.size(), " bytes");
  SB_CHECK(file.size() == expected, "shard '", path, "': the header says ", info.tokens, " tokens (", expected,
           " bytes with the header) but the file has ", file.size(), " bytes; header and file disagree");
  return info;
}

// Widens n tokens to int32; returns the largest (for the vocabulary check).
template <class T>
uint32_t widen(const T* src, uint64_t n, int32_t* out) {
  uint32_t largest = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t v = src[i];
    out[i] = int32_t(v);
    largest = std::max(largest, v);
  }
  return largest;
}

}  // namespace

ShardInfo read_shard_header(const std::string& path) { return check_shard(MappedFile(path)); }

ShardFiles::ShardFiles(const std::string& pattern, uint64_t vocab) : pattern_(pattern), vocab_(vocab) {
  for (const std::string& path : glob_files(pattern, "shards")) {
    MappedFile file(path);
    info_.push_back(check_shard(file));
    maps_.push_back(std::move(file));
    starts_.push_back(total_);
    total_ += info_.back().tokens;
  }
  starts_.push_back(total_);
}

ShardFiles::~ShardFiles() = default;

std::string ShardFiles::describe() const {
  return "shards '" + pattern_ + "' (" + std::to_string(info_.size()) + " file" + (info_.size() == 1 ? "" : "s") +
         ", " + std::to_string(total_) + " tokens)";
}

void ShardFiles::read(uint64_t pos, uint64_t len, int32_t* out) const {
  SB_CHECK(pos <= total_ && len <= total_ - pos, describe(), ": window [", pos, ", ", pos + len, ") is outside the ",
           total_, " tokens");
  size_t f = size_t(std::upper_bound(starts_.begin(), starts_.end() - 1, pos) - starts_.begin()) - 1;
  while (len > 0) {
    while (starts_[f + 1] <= pos) ++f;  // skip files that end here (or are empty)
    const uint64_t offset = pos - starts_[f];
    const uint64_t n = std::min(len, starts_[f + 1] - pos);
    const uint8_t* body = maps_[f].data() + kShardHeaderBytes;
    const uint32_t largest = info_[f].version == 1 ? widen(reinterpret_cast<const uint16_t*>(body) + offset, n, out)
                                                   : widen(reinterpret_cast<const uint32_t*>(body) + offset, n, out);
    if (largest >= vocab_) {
      const uint64_t i = uint64_t(std::find_if(out, out + n, [&](int32_t t) { return uint32_t(t) >= vocab_; }) - out);
      SB_FAIL("shard '", info_[f].path, "': token ", uint32_t(out[i]), " at token position ", offset + i,
              " is >= vocab ", vocab_, " (model.vocab); the data was tokenized for a larger vocabulary");
    }
    pos += n;
    out += n;
    len -= n;
  }
}

ShardWriter::ShardWriter(const std::string& path, int version) : path_(path), tmp_(path + ".tmp"), version_(version) {
  SB_CHECK(version == 1 || version == 2, "shard writer: version ", version, ", expected 1 or 2");
  file_ = std::fopen(tmp_.c_str(), "wb");
  SB_CHECK(file_ != nullptr, "cannot create '", tmp_, "': ", std::strerror(errno));
  const int32_t zeros[kShardHeaderInts] = {};
  SB_CHECK(std::fwrite(zeros, 4, kShardHeaderInts, file_) == kShardHeaderInts, "cannot write '", tmp_,
           "': ", std::strerror(errno));
}

ShardWriter::~ShardWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void ShardWriter::append(const int32_t* tokens, uint64_t n) {
  SB_CHECK(file_ != nullptr, "shard writer '", path_, "': append after finish");
  if (n == 0) return;
  const uint64_t limit = version_ == 1 ? 65536 : (uint64_t{1} << 31);
  SB_CHECK(n <= uint64_t(INT32_MAX) - count_, "shard '", path_, "': more than ", INT32_MAX,
           " tokens, the most one shard's header can count; write several shards");
  const size_t width = version_ == 1 ? 2 : 4;
  buffer_.resize(n * width);
  for (uint64_t i = 0; i < n; ++i) {
    SB_CHECK(tokens[i] >= 0 && uint64_t(tokens[i]) < limit, "shard '", path_, "': token ", tokens[i],
             " does not fit version ", version_, " (", version_ == 1 ? "uint16" : "uint32", ")");
    if (version_ == 1) {
      const uint16_t v = uint16_t(tokens[i]);
      std::memcpy(buffer_.data() + 2 * i, &v, 2);
    } else {
      const uint32_t v = uint32_t(tokens[i]);
      std::memcpy(buffer_.data() + 4 * i, &v, 4);
    }
  }
  SB_CHECK(std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size(), "cannot write '", tmp_,
           "': ", std::strerror(errno));
  count_ += n;
}

void ShardWriter::finish() {
  SB_CHECK(file_ != nullptr, "shard writer '", path_, "': finished twice");
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = version_;
  header[2] = int32_t(count_);
  const bool ok = std::fseek(file_, 0, SEEK_SET) == 0 &&
                  std::fwrite(header, 4, kShardHeaderInts, file_) == kShardHeaderInts && std::fflush(file_) == 0;
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = ok && closed ? errno : err;
    std::remove(tmp_.c_str());
    SB_FAIL("cannot write '", path_, "': ", std::strerror(e));
  }
}

}  // namespace sb::data
