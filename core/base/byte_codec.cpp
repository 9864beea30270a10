// byte_codec.hpp: the reader's checks. Every length is compared with the bytes left (by division,
// so no product can overflow) before the caller allocates for it.
#include "samebits/core/byte_codec.hpp"

#include "samebits/det/error.hpp"

namespace sb {

void ByteReader::finish() const {
  SB_CHECK(at_ == bytes_.size(), what_, " has ", bytes_.size() - at_, " bytes more than expected", hint_);
}

std::size_t ByteReader::length(std::size_t element_size) {
  const uint64_t n = get<uint64_t>();
  SB_CHECK(n <= (bytes_.size() - at_) / element_size, what_, " announces ", n, " values but holds ",
           bytes_.size() - at_, " more bytes", hint_);
  return static_cast<std::size_t>(n);
}

void ByteReader::take(void* out, std::size_t n) {
  SB_CHECK(n <= bytes_.size() - at_, what_, " ends early", hint_);
  if (n > 0) std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
}

}  // namespace sb
