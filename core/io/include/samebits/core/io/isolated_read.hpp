// Reading untrusted files in a separate process. HDF5 1.10's decoders can crash or corrupt memory
// on damaged or crafted metadata that a valid seal does not exclude (anyone can compute an XXH3),
// so every file samebits reads back (run files, checkpoints, HDF5 token datasets) is parsed by a
// reader process with resource limits (address space, CPU time, no file writes, no core dump, no
// other open descriptors) that validates it and hands back plain values over a pipe. A crash,
// sanitizer report, memory fault or hang in the reader becomes one sb::Error "<file> could not be
// read safely: …" and cannot touch the calling process or its files. The reader is a fresh program
// (samebits-reader, spawned and exec'd: reader_process.hpp), not a fork, so it inherits no lock
// another thread of the caller held. Contract: values come back bit for bit (bytes copied
// verbatim; both ends are the same build).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace sb::io {

// The reader's answer: trivially copyable values, strings and arrays, appended in order.
class PlainWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  void put_string(const std::string& s) { put_array(s.data(), s.size()); }
  template <class T>
  void put_vector(const std::vector<T>& v) { put_array(v.data(), v.size()); }
  std::vector<std::byte>& bytes() { return bytes_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  template <class T>
  void put_array(const T* data, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(uint64_t{n});
    append(data, n * sizeof(T));
  }
  void append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<std::byte> bytes_;
};

// Reads a PlainWriter's bytes back. A reader process that was subverted could send anything, so
// every length is checked against what is left before anything is allocated; a short or long
// answer is an sb::Error naming `file`.
class PlainReader {
 public:
  PlainReader(const std::vector<std::byte>& bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    take(&v, sizeof(T));
    return v;
  }
  std::string get_string() {
    std::string s(length(1), '\0');
    take(s.data(), s.size());
    return s;
  }
  template <class T>
  std::vector<T> get_vector() {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> v(length(sizeof(T)));
    take(v.data(), v.size() * sizeof(T));
    return v;
  }
  // Throws unless every byte was read.
  void finish() const;

 private:
  std::size_t length(std::size_t element_size);
  void take(void* out, std::size_t n);
  const std::vector<std::byte>& bytes_;
  std::string file_;
  std::size_t at_ = 0;
};

// Runs the reader kind `kind` (reader_process.hpp) on the file `path` with `params` in a new
// reader process started from the executable `reader`, and returns its answer's bytes. An
// sb::Error the kind throws is rethrown here with its message. `path` also sets the limits (the
// address space and the answer may grow with its size).
std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path, const PlainWriter& params,
                                     const std::string& reader);
// The same with reader_executable().
std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path,
                                     const PlainWriter& params = PlainWriter());

// The samebits-reader executable: beside the running program (/proc/self/exe: the CLI, installed
// or copied with it), else in the build tree's bin/ (tests and benchmarks live in bin/tests and
// bin/bench). Throws sb::Error naming both places when neither holds it.
std::string reader_executable();

}  // namespace sb::io
