// store_data.hpp: one pass over a store file in file order, window by window: compose (reserved
// regions from memory, the rest read back), hash, write (direct I/O, or the page cache where the
// file system refuses it). Direct writes cover whole 4 KiB blocks of 4 KiB-aligned memory; the
// file's last partial block goes through the page cache.
#include "samebits/core/io/store_data.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "samebits/det/error.hpp"

namespace sb::run {
namespace {

constexpr uint64_t kWindow = uint64_t{8} << 20;
constexpr uint64_t kBlock = 4096;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void read_at(int fd, const std::string& path, char* out, uint64_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    SB_CHECK(got > 0, "cannot read '", path, "' at byte ", offset, ": ",
             got == 0 ? "unexpected end of file" : std::strerror(errno));
    out += got;
    n -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

// Writes n bytes at offset; false when a direct write is refused as such (EINVAL: the file system
// or the alignment), so that the caller goes on through the page cache. Other failures throw.
bool write_at(int fd, const std::string& path, const char* data, uint64_t n, uint64_t offset, bool direct) {
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EINVAL && direct) return false;
    SB_CHECK(put > 0, "cannot write '", path, "' at byte ", offset, ": ", std::strerror(errno), " (disk full?)");
    data += put;
    n -= static_cast<uint64_t>(put);
    offset += static_cast<uint64_t>(put);
  }
  return true;
}

}  // namespace

uint64_t write_store_data(const std::string& path, uint64_t length, std::vector<RawWrite> raw, bool direct) {
  std::sort(raw.begin(), raw.end(), [](const RawWrite& a, const RawWrite& b) { return a.offset < b.offset; });
  for (std::size_t i = 0; i < raw.size(); ++i) {
    SB_CHECK(raw[i].offset <= length && raw[i].bytes <= length - raw[i].offset &&
                 (i == 0 || raw[i - 1].offset + raw[i - 1].bytes <= raw[i].offset),
             path, ": dataset bytes at ", raw[i].offset, " (", raw[i].bytes, ") outside the file's ", length,
             " bytes or over another dataset's");
  }
  Fd plain{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  SB_CHECK(plain.fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  Fd fast{direct ? ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC) : -1};
  const std::unique_ptr<char, decltype(&std::free)> stage(static_cast<char*>(std::aligned_alloc(kBlock, kWindow)),
                                                         &std::free);
  SB_CHECK(stage != nullptr, "cannot allocate ", kWindow, " bytes to write '", path, "'");
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(), &XXH3_freeState);
  SB_CHECK(hash != nullptr && XXH3_64bits_reset(hash.get()) == XXH_OK, "cannot start a hash of '", path, "'");
  std::size_t r = 0;  // the first region that ends after `at`
  for (uint64_t begin = 0; begin < length; begin += kWindow) {
    const uint64_t end = std::min(begin + kWindow, length);
    for (uint64_t at = begin; at < end;) {
      while (r < raw.size() && raw[r].offset + raw[r].bytes <= at) ++r;
      char* to = stage.get() + (at - begin);
      uint64_t n = 0;
      if (r < raw.size() && raw[r].offset <= at) {  // inside a dataset: from memory
        n = std::min(end, raw[r].offset + raw[r].bytes) - at;
        std::memcpy(to, static_cast<const char*>(raw[r].data) + (at - raw[r].offset), n);
      } else {  // metadata or padding: as HDF5 left it
        n = (r < raw.size() ? std::min(end, raw[r].offset) : end) - at;
        read_at(plain.fd, path, to, n, at);
      }
      at += n;
    }
    XXH3_64bits_update(hash.get(), stage.get(), end - begin);
    const uint64_t whole = (end - begin) / kBlock * kBlock;
    if (fast.fd >= 0 && whole > 0 && !write_at(fast.fd, path, stage.get(), whole, begin, true)) {
      ::close(fast.fd);
      fast.fd = -1;
    }
    const uint64_t done = fast.fd >= 0 ? whole : 0;
    write_at(plain.fd, path, stage.get() + done, end - begin - done, begin + done, false);
  }
  return XXH3_64bits_digest(hash.get());
}

}  // namespace sb::run
