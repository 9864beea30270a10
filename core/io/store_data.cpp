// store_data.hpp: one pass over a store file in file order, window by window: compose (reserved
// regions from memory, the rest read back), hash, write (direct I/O, or the page cache where the
// file system refuses it). Direct writes cover whole 4 KiB blocks of 4 KiB-aligned memory; the
// file's last partial block goes through the page cache.
#include "samebits/core/io/store_data.hpp"

#include <fcntl.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "posix_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::run {
namespace {

constexpr uint64_t kWindow = uint64_t{8} << 20;
constexpr uint64_t kBlock = 4096;

}  // namespace

StoreDataWrite write_store_data(const std::string& path, uint64_t length, std::vector<RawWrite> raw, bool direct) {
  std::sort(raw.begin(), raw.end(), [](const RawWrite& a, const RawWrite& b) { return a.offset < b.offset; });
  for (std::size_t i = 0; i < raw.size(); ++i) {
    SB_CHECK(raw[i].offset <= length && raw[i].bytes <= length - raw[i].offset &&
                 (i == 0 || raw[i - 1].offset + raw[i - 1].bytes <= raw[i].offset),
             path, ": dataset bytes at ", raw[i].offset, " (", raw[i].bytes, ") outside the file's ", length,
             " bytes or over another dataset's");
  }
  const Fd plain(path, O_RDWR);
  Fd fast = direct ? Fd::try_open(path, O_WRONLY | O_DIRECT) : Fd::closed();  // fd -1: no direct I/O
  const std::unique_ptr<char, decltype(&std::free)> stage(static_cast<char*>(std::aligned_alloc(kBlock, kWindow)),
                                                          &std::free);
  SB_CHECK(stage != nullptr, "cannot allocate ", kWindow, " bytes to write '", path, "'");
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(), &XXH3_freeState);
  SB_CHECK(hash != nullptr && XXH3_64bits_reset(hash.get()) == XXH_OK, "cannot start a hash of '", path, "'");
  std::size_t r = 0;  // the first region that ends after `at`
  std::size_t fetched = raw.size();
  const void* from = nullptr;  // region `fetched`'s bytes
  StoreDataWrite result;
  for (uint64_t begin = 0; begin < length; begin += kWindow) {
    const uint64_t end = std::min(begin + kWindow, length);
    for (uint64_t at = begin; at < end;) {
      while (r < raw.size() && raw[r].offset + raw[r].bytes <= at) ++r;
      char* to = stage.get() + (at - begin);
      uint64_t n = 0;
      if (r < raw.size() && raw[r].offset <= at) {  // inside a dataset: from memory
        n = std::min(end, raw[r].offset + raw[r].bytes) - at;
        if (fetched != r) {
          from = raw[r].data != nullptr ? raw[r].data : raw[r].fetch();
          fetched = r;
        }
        std::memcpy(to, static_cast<const char*>(from) + (at - raw[r].offset), n);
      } else {  // metadata or padding: as HDF5 left it
        n = (r < raw.size() ? std::min(end, raw[r].offset) : end) - at;
        read_at(plain, path, to, n, at);
      }
      at += n;
    }
    XXH3_64bits_update(hash.get(), stage.get(), end - begin);
    const uint64_t whole = (end - begin) / kBlock * kBlock;
    if (fast.fd >= 0 && whole > 0 && !write_at(fast, path, stage.get(), whole, begin, true)) fast.close();
    const uint64_t done = fast.fd >= 0 ? whole : 0;
    write_at(plain, path, stage.get() + done, end - begin - done, begin + done);
    result.direct_bytes += done;
  }
  result.digest = XXH3_64bits_digest(hash.get());
  return result;
}

}  // namespace sb::run
