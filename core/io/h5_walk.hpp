// Internal to core/io: the pieces of h5::check_structure (h5_structure.hpp). A Block is bytes of
// the file read with pread and bounds-checked on every access; the message parsers
// (h5_walk_messages.cpp) check one HDF5 object-header message each against the HDF5 1.10 file
// format and against what samebits writes, and hand back what the walk (h5_structure.cpp) needs to
// check the structures the message points to. Nothing here calls HDF5.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "samebits/det/error.hpp"

namespace sb::h5::walk {

constexpr uint64_t kUndefined = ~uint64_t{0};  // HDF5's undefined address

// A structure that is damaged or not one samebits writes: the byte of the file where it starts,
// and what is wrong.
struct Damage {
  uint64_t at;
  std::string what;
};

template <class... A>
void need(bool ok, uint64_t at, const A&... what) {
  if (!ok) throw Damage{at, sb::detail::concat(what...)};
}

// Bytes [at, at + size) of the file.
class Block {
 public:
  Block() = default;
  Block(uint64_t at, std::vector<uint8_t> bytes) : at_(at), b_(std::move(bytes)) {}
  uint64_t at() const { return at_; }
  uint64_t size() const { return b_.size(); }
  bool has(uint64_t off, uint64_t n) const { return off <= b_.size() && n <= b_.size() - off; }
  // The little-endian unsigned integer of `width` (1 to 8) bytes at `off`; Damage past the end.
  uint64_t u(uint64_t off, int width) const {
    need(has(off, uint64_t(width)), at_ + off, "a field of ", width, " bytes runs past the end of its structure");
    uint64_t v = 0;
    for (int k = width - 1; k >= 0; --k) v = (v << 8) | b_[off + uint64_t(k)];
    return v;
  }
  uint8_t byte(uint64_t off) const { return static_cast<uint8_t>(u(off, 1)); }
  bool starts_with(uint64_t off, const char* magic) const;
  // Bytes [off, off + n) as a block of their own.
  Block sub(uint64_t off, uint64_t n) const;

 private:
  uint64_t at_ = 0;
  std::vector<uint8_t> b_;
};

// A datatype samebits reads: a little- or big-endian integer or IEEE float of `size` bytes
// (number), a fixed-length string of `size` bytes, or a variable-length string (16 bytes in the
// file: length, global heap collection, object index).
struct Type {
  enum Kind { number, string, vlen_string } kind = number;
  uint64_t size = 0;
};

// A dataspace: null, scalar (rank 0) or simple.
struct Space {
  bool null = false;
  std::vector<uint64_t> dims;
  uint64_t points = 0;
};

// A layout message: contiguous (address, size) or chunked (the index's address and the chunk's
// extents, the element size last).
struct Layout {
  bool chunked = false;
  uint64_t address = kUndefined, size = 0;
  std::vector<uint64_t> chunk;
};

// A variable-length string in an attribute: its length and where its bytes are.
struct VlenRef {
  uint64_t at, length, collection, index;
};

// A link (a link message, or a symbol-table entry): a hard link names an object header; a soft or
// external link is only checked for shape — samebits never follows a link it did not make.
struct Link {
  std::string name;
  bool hard = false;
  uint64_t address = kUndefined;
};

// What one object header holds, as far as the walk needs it.
struct Object {
  uint64_t at = 0;
  int types = 0, spaces = 0, layouts = 0, fills = 0, tables = 0, link_infos = 0, group_infos = 0;
  Type type;
  Space space;
  Layout layout;
  uint64_t fill_size = 0;  // a defined fill value's size, 0 when none
  uint64_t fill_at = 0;
  uint64_t table_btree = kUndefined, table_heap = kUndefined;  // a symbol-table message's
  std::vector<Link> links;
  std::vector<std::string> attributes;
  std::vector<VlenRef> strings;
  std::vector<std::pair<uint64_t, uint64_t>> continuations;  // (address, length)
};

// Parse the body of one message (`type`) into `o`, checking every field. `eof`: HDF5's end of file.
void parse_message(const Block& body, unsigned type, uint64_t eof, Object& o);
// A datatype or dataspace encoded at `off` of `b`, in at most `limit` bytes; `used` gets its size.
Type parse_type(const Block& b, uint64_t off, uint64_t limit, uint64_t& used);
Space parse_space(const Block& b, uint64_t off, uint64_t limit, uint64_t& used);

// A name samebits could have written: 1 to 1024 printable ASCII characters, no '/'.
bool plain_name(const std::string& name);

}  // namespace sb::h5::walk
