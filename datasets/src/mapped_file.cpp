// MappedFile (mmap, read-only, shared with the page cache) and glob_files (POSIX glob, sorted).
#include "mapped_file.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "samebits/det/error.hpp"

namespace sb::data {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SB_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    ::close(fd);
    SB_FAIL("'", path, "' is not a regular file", stat_ok && S_ISDIR(st.st_mode) ? " but a directory" : "");
  }
  size_ = uint64_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    SB_CHECK(p != MAP_FAILED, "cannot map '", path, "' (", size_, " bytes): ", std::strerror(err));
    data_ = static_cast<const uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

std::vector<std::string> glob_files(const std::string& pattern, const char* what) {
  SB_CHECK(!pattern.empty(), what, ": the path is empty; set data.path (or data.val_path)");
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> files;
  if (rc == 0) files.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  const bool wildcard = pattern.find_first_of("*?[") != std::string::npos;
  SB_CHECK(rc != GLOB_NOMATCH || !wildcard, what, ": no file matches the glob '", pattern, "'");
  SB_CHECK(rc != GLOB_NOMATCH, what, ": no such file '", pattern, "'");
  SB_CHECK(rc != GLOB_ABORTED, what, ": cannot read a directory of '", pattern,
           "' (it does not exist or is not readable); check data.path and data.val_path");
  SB_CHECK(rc == 0, what, ": cannot expand '", pattern, "' (glob error ", rc, ")");
  return files;
}

}  // namespace sb::data
