// Values as bytes and back: trivially copyable values, strings and arrays appended in order, each
// array after its length, bytes copied verbatim (host byte order: both ends are the same build), so
// values come back bit for bit. The one serializer of what one rank broadcasts (a TrainerState,
// the sharded optimizer's state) and of the isolated reader's answer (io/isolated_read.hpp).
// The reader trusts no length: each is checked against the bytes left before anything is allocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace sb {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    append(&v, sizeof(T));
  }
  // n, then the n values.  data: (n).
  template <class T>
  void put_array(const T* data, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(uint64_t{n});
    append(data, n * sizeof(T));
  }
  void put_string(std::string_view s) { put_array(s.data(), s.size()); }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    put_array(v.data(), v.size());
  }
  std::vector<std::byte>& bytes() { return bytes_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  void append(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<std::byte> bytes_;
};

// Reads a ByteWriter's bytes back in the order written. A short answer, a length beyond the bytes
// left, or bytes left over at finish() is an sb::Error "<what> ends early<hint>" (… "announces N
// values but holds M more bytes", … "has N bytes more than expected").
class ByteReader {
 public:
  // what: the bytes in messages ("the broadcast from rank 0"); hint: appended to each ("; the ranks
  // run different samebits builds").
  ByteReader(const std::vector<std::byte>& bytes, std::string what, std::string hint = "")
      : bytes_(bytes), what_(std::move(what)), hint_(std::move(hint)) {}
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
  std::string what_, hint_;
  std::size_t at_ = 0;
};

}  // namespace sb
