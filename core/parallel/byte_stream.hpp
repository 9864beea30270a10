// Internal: a flat byte encoding of named float arrays and scalars, so that one rank's optimizer
// state or checkpoint can travel in a single broadcast. Bytes are copied verbatim (host byte
// order; every rank of a job runs the same build), so values arrive bit for bit.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "samebits/core/parallel/communicator.hpp"
#include "samebits/det/error.hpp"

namespace sb::dist_detail {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put(uint64_t{s.size()});
    append(s.data(), s.size());
  }
  // values: (n)
  void put_floats(const float* values, size_t n) {
    put(uint64_t{n});
    append(values, n * sizeof(float));
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  void append(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<unsigned char> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    take(&v, sizeof(T));
    return v;
  }
  std::string get_string() {
    std::string s(get<uint64_t>(), '\0');
    take(s.data(), s.size());
    return s;
  }
  std::vector<float> get_floats() {
    std::vector<float> v(get<uint64_t>());
    take(v.data(), v.size() * sizeof(float));
    return v;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* out, size_t n) {
    SB_CHECK(n <= bytes_.size() - at_, "a broadcast message ends after ", bytes_.size(),
             " bytes, but ", at_ + n,
             " were needed; the ranks run different samebits builds "
             "or configurations");
    if (n > 0) std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::vector<unsigned char>& bytes_;
  size_t at_ = 0;
};

// bytes ← root's bytes on every rank (its length first, then the content).
inline void broadcast_bytes(std::vector<unsigned char>& bytes, int root, Communicator& comm) {
  uint64_t n = bytes.size();
  comm.broadcast(&n, sizeof(n), root);
  bytes.resize(n);
  comm.broadcast(bytes.data(), n, root);
}

}  // namespace sb::dist_detail
