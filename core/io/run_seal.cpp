// run_seal.hpp: the 32-byte trailer (magic, content length, XXH3-64 of the content, magic) that
// makes every damage to a samebits file detectable before HDF5 reads it. POSIX I/O with checked
// results; the hash streams the file in 1 MiB blocks.
#include "samebits/core/io/run_seal.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "posix_file.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::run {
namespace {

constexpr char kHeadMagic[8] = {'S', 'B', 'S', 'E', 'A', 'L', '0', '1'};
constexpr char kTailMagic[8] = {'S', 'A', 'M', 'E', 'B', 'I', 'T', 'S'};

// XXH3-64 of bytes [0, n) of the file.
uint64_t hash_prefix(const Fd& f, const std::string& path, uint64_t n) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  SB_CHECK(state != nullptr && XXH3_64bits_reset(state.get()) == XXH_OK, "cannot start a hash of '", path, "'");
  std::vector<char> block(std::size_t{1} << 20);
  for (uint64_t at = 0; at < n;) {
    const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(block.size(), n - at));
    read_at(f, path, block.data(), len, at);
    XXH3_64bits_update(state.get(), block.data(), len);
    at += len;
  }
  return XXH3_64bits_digest(state.get());
}

uint64_t load_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void store_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::array<unsigned char, kSealBytes> make_seal(uint64_t length, uint64_t hash) {
  std::array<unsigned char, kSealBytes> t{};
  std::memcpy(t.data(), kHeadMagic, 8);
  store_u64(t.data() + 8, length);
  store_u64(t.data() + 16, hash);
  std::memcpy(t.data() + 24, kTailMagic, 8);
  return t;
}

// The content length and hash the seal records, after checking the magic, the length and the
// hash; throws otherwise.
struct Sealed {
  uint64_t length = 0, digest = 0;
};
Sealed sealed_content(const Fd& f, const std::string& path) {
  const uint64_t size = file_size(f, path);
  SB_CHECK(size >= kSealBytes, "'", path, "' is damaged: ", size,
           " bytes is too short for a samebits file (truncated?)");
  std::array<unsigned char, kSealBytes> t{};
  read_at(f, path, t.data(), t.size(), size - kSealBytes);
  SB_CHECK(std::memcmp(t.data(), kHeadMagic, 8) == 0 && std::memcmp(t.data() + 24, kTailMagic, 8) == 0, "'", path,
           "' is damaged or not written by samebits: its last ", kSealBytes,
           " bytes are not a samebits seal (truncated, or modified by another program)");
  const uint64_t length = load_u64(t.data() + 8);
  SB_CHECK(length == size - kSealBytes, "'", path, "' is damaged: its seal records ", length,
           " content bytes, the file holds ", size - kSealBytes, " (truncated or extended)");
  const uint64_t recorded = load_u64(t.data() + 16);
  const uint64_t actual = hash_prefix(f, path, length);
  SB_CHECK(actual == recorded, "'", path, "' is damaged: its content hash is ", det::fingerprint_hex(actual),
           ", the seal records ", det::fingerprint_hex(recorded), " (bytes changed after samebits wrote it)");
  return {length, recorded};
}

}  // namespace

uint64_t seal_file(const std::string& path) {
  const Fd f(path, O_RDWR);
  const uint64_t size = file_size(f, path);
  if (size >= kSealBytes) {
    std::array<unsigned char, kSealBytes> t{};
    read_at(f, path, t.data(), t.size(), size - kSealBytes);
    SB_CHECK(std::memcmp(t.data() + 24, kTailMagic, 8) != 0, "'", path, "' is already sealed");
  }
  const uint64_t digest = hash_prefix(f, path, size);
  const auto seal = make_seal(size, digest);
  write_at(f, path, seal.data(), seal.size(), size);
  return digest;
}

void append_seal(const std::string& path, uint64_t length, uint64_t hash) {
  const Fd f(path, O_WRONLY);
  SB_CHECK(file_size(f, path) == length, "'", path, "' is not the ", length, " bytes to be sealed");
  const auto seal = make_seal(length, hash);
  write_at(f, path, seal.data(), seal.size(), length);
}

uint64_t write_sealed_file(const std::string& path, const std::vector<std::byte>& image) {
  const uint64_t digest = XXH3_64bits(image.data(), image.size());
  const auto seal = make_seal(image.size(), digest);
  h5::write_file_atomically(path, [&](const std::string& tmp) {
    Fd f(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    write_at(f, tmp, image.data(), image.size(), 0);
    write_at(f, tmp, seal.data(), seal.size(), image.size());
    f.close_checked(tmp);
  });
  return digest;
}

uint64_t check_seal(const std::string& path) {
  const Fd f(path, O_RDONLY);
  return sealed_content(f, path).digest;
}

void unseal_file(const std::string& path) {
  const Fd f(path, O_RDWR);
  const uint64_t length = sealed_content(f, path).length;
  SB_CHECK(::ftruncate(f.fd, static_cast<off_t>(length)) == 0, "cannot truncate '", path, "': ", std::strerror(errno));
}

}  // namespace sb::run
