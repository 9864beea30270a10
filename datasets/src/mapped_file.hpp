// MappedFile: a read-only memory map of a whole file (RAII), for the shard and text sources.
// Errors name the file and the system's reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb::data {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;

  const uint8_t* data() const { return data_; }  // (size,) or null when the file is empty
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// The files a glob pattern matches, sorted; an sb::Error naming the pattern when none does.
std::vector<std::string> glob_files(const std::string& pattern, const char* what);

}  // namespace sb::data
