// file_digest.hpp: XXH3-64 of a file read in 8 MiB pieces, and the digest cache — one line per file,
// "digest bytes mtime_ns ctime_ns device inode path", rewritten whole (temporary file, rename).
// A line is used only when every field of the file's identity equals it; ctime cannot be set back
// by a user (utimensat sets mtime), so a file written after it was hashed always misses.
#include "samebits/data/file_digest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "samebits/det/error.hpp"

namespace sb::data {
namespace {

namespace fs = std::filesystem;

struct Identity {
  uint64_t bytes = 0, mtime = 0, ctime = 0, device = 0, inode = 0;
  bool operator==(const Identity&) const = default;
};

Identity identity_of(const struct stat& st) {
  const auto ns = [](const timespec& t) { return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec); };
  return {uint64_t(st.st_size), ns(st.st_mtim), ns(st.st_ctim), uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

std::string cache_path() {
  if (const char* p = std::getenv("SB_DIGEST_CACHE"); p != nullptr && *p != '\0') {
    return std::string(p) == "off" ? "" : p;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/samebits/file_digests.tsv";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/samebits/file_digests.tsv";
  }
  return "";
}

struct Entry {
  Identity id;
  uint64_t digest = 0;
};

// The cache's lines by absolute path; a malformed line is skipped (the file is hashed again).
std::map<std::string, Entry> read_cache(const std::string& path) {
  std::map<std::string, Entry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    Entry e;
    std::string file;
    s >> std::hex >> e.digest >> std::dec >> e.id.bytes >> e.id.mtime >> e.id.ctime >> e.id.device >> e.id.inode;
    if (!s || s.get() != ' ' || !std::getline(s, file) || file.empty()) continue;
    out[file] = e;
  }
  return out;
}

void write_cache(const std::string& path, const std::map<std::string, Entry>& entries) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [file, e] : entries) {
      out << std::hex << e.digest << std::dec << ' ' << e.id.bytes << ' ' << e.id.mtime << ' ' << e.id.ctime << ' '
          << e.id.device << ' ' << e.id.inode << ' ' << file << '\n';
    }
    if (!out.good()) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

}  // namespace

FileDigest hash_file(const std::string& path) {
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  SB_CHECK(f.fd >= 0, "cannot open data file '", path, "': ", std::strerror(errno));
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  SB_CHECK(state != nullptr && XXH3_64bits_reset(state.get()) == XXH_OK, "cannot hash '", path, "': out of memory");
  std::vector<char> buf(std::size_t{8} << 20);  // (8 MiB,)
  FileDigest d;
  for (;;) {
    const ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    SB_CHECK(n >= 0, "cannot read data file '", path, "': ", std::strerror(errno));
    if (n == 0) break;
    XXH3_64bits_update(state.get(), buf.data(), std::size_t(n));
    d.bytes += uint64_t(n);
  }
  d.digest = XXH3_64bits_digest(state.get());
  return d;
}

FileDigest file_digest(const std::string& path) {
  struct stat before {};
  SB_CHECK(::stat(path.c_str(), &before) == 0, "cannot open data file '", path, "': ", std::strerror(errno));
  SB_CHECK(S_ISREG(before.st_mode), "data file '", path, "' is not a regular file");
  const std::string cache = cache_path();
  std::error_code ec;
  const std::string key = fs::absolute(path, ec).lexically_normal().string();
  if (key.find('\n') != std::string::npos) ec = std::make_error_code(std::errc::invalid_argument);  // not a line
  std::map<std::string, Entry> entries;
  if (!cache.empty() && !ec) {
    entries = read_cache(cache);
    const auto it = entries.find(key);
    if (it != entries.end() && it->second.id == identity_of(before))
      return {it->second.id.bytes, it->second.digest, true};
  }
  FileDigest d = hash_file(path);
  struct stat after {};
  // Cached only when the file did not change while it was read (and its size is what was read).
  if (!cache.empty() && !ec && ::stat(path.c_str(), &after) == 0 && identity_of(after) == identity_of(before) &&
      d.bytes == uint64_t(after.st_size)) {
    entries[key] = {identity_of(after), d.digest};
    write_cache(cache, entries);
  }
  return d;
}

}  // namespace sb::data
