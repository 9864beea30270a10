// posix_file.hpp (private to core/io): a file descriptor closed on scope exit and whole-range
// pread/pwrite with checked results (EINTR retried, short transfers continued): every raw file
// access of core/io (the seal, the store files' data and space, the HDF5 structure walk) goes
// through it. Errors name the file and the byte.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "samebits/det/error.hpp"

namespace sb::run {

// An open file descriptor, closed on scope exit. Opening throws; Fd::try_open gives fd -1 instead,
// Fd::closed() none.
struct Fd {
  int fd = -1;
  Fd(const std::string& path, int flags) : fd(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    SB_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  }
  static Fd try_open(const std::string& path, int flags) { return Fd(::open(path.c_str(), flags | O_CLOEXEC)); }
  static Fd closed() { return Fd(-1); }
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // close(), throwing when the kernel reports a failed write-back (a full disk) on closing.
  void close_checked(const std::string& path) {
    const int raw = fd;
    fd = -1;
    SB_CHECK(raw < 0 || ::close(raw) == 0, "cannot close '", path, "': ", std::strerror(errno), " (disk full?)");
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

 private:
  explicit Fd(int raw) : fd(raw) {}
};

inline uint64_t file_size(const Fd& f, const std::string& path) {
  struct stat st {};
  SB_CHECK(::fstat(f.fd, &st) == 0, "cannot stat '", path, "': ", std::strerror(errno));
  SB_CHECK(S_ISREG(st.st_mode), "'", path, "' is not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

// Reads exactly n bytes at offset, or throws.
inline void read_at(const Fd& f, const std::string& path, void* out, std::size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(f.fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    SB_CHECK(got > 0, "cannot read '", path, "' at byte ", offset, ": ",
             got == 0 ? "unexpected end of file" : std::strerror(errno));
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

// Writes exactly n bytes at offset, or throws. refuse_einval: return false instead when the write
// is refused with EINVAL (direct I/O the file system or the alignment does not allow).
inline bool write_at(const Fd& f, const std::string& path, const void* data, std::size_t n, uint64_t offset,
                     bool refuse_einval = false) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::pwrite(f.fd, p, n, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno == EINVAL && refuse_einval) return false;
    SB_CHECK(put > 0, "cannot write '", path, "' at byte ", offset, ": ", std::strerror(errno), " (disk full?)");
    p += put;
    n -= static_cast<std::size_t>(put);
    offset += static_cast<uint64_t>(put);
  }
  return true;
}

}  // namespace sb::run
