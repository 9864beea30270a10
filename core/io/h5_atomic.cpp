// h5.hpp: crash-safe whole-file replacement (checkpoints). Write "<path>.tmp.<pid>", fsync it,
// rename it over <path>, fsync the directory: after a crash at any moment, <path> is either the
// complete old file or the complete new one.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "posix_file.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

namespace {

void fsync_path(const std::string& path, bool directory) {
  const run::Fd f(path, directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  SB_CHECK(::fsync(f.fd) == 0, "fsync of '", path, "' failed: ", std::strerror(errno), " (disk full or failing?)");
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove(tmp, ec);  // a leftover of an earlier process with our pid
  try {
    write(tmp);
    fsync_path(tmp, false);
    SB_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename '", tmp, "' to '", path,
             "': ", std::strerror(errno));
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  fsync_path(directory_of(path), true);
}

void write_h5_atomically(const std::string& path, const std::function<void(File&)>& fill) {
  write_file_atomically(path, [&](const std::string& tmp) {
    File file = File::create(tmp, Create::truncate);
    fill(file);
    file.close();
  });
}

}  // namespace sb::h5
