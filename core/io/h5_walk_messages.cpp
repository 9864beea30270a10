// h5_walk.hpp: the object-header messages of the files samebits writes, each checked field by field
// before HDF5 decodes it (HDF5 1.10's decoders do not bound their reads by the message's size):
// dataspace (versions 1, 2), datatype (integers of 1, 2, 4 or 8 bytes, IEEE floats as samebits
// writes them, fixed- and variable-length strings), fill value (old and new), layout (version 3, contiguous or
// chunked), attribute (versions 1 to 3, nothing shared), symbol table, link info (compact storage only), group info,
// link (hard, soft, external), continuation and modification time. Every size, count and address is checked against the
// message and the file; anything else is refused.
#include <cstring>

#include "h5_walk.hpp"

namespace sb::h5::walk {

bool Block::starts_with(uint64_t off, const char* magic) const {
  const std::size_t n = std::strlen(magic);
  return has(off, n) && std::memcmp(b_.data() + off, magic, n) == 0;
}

Block Block::sub(uint64_t off, uint64_t n) const {
  need(has(off, n), at_ + off, "a structure of ", n, " bytes runs past the end of the one that holds it");
  return Block(at_ + off, std::vector<uint8_t>(b_.begin() + long(off), b_.begin() + long(off + n)));
}

bool plain_name(const std::string& name) {
  if (name.empty() || name.size() > 1024) return false;
  for (const char c : name) {
    if (c < ' ' || c > '~' || c == '/') return false;
  }
  return true;
}

namespace {

constexpr uint64_t kMaxExtent = uint64_t{1} << 48;
constexpr uint64_t kMaxAttributeBytes = 65536;

// An address: undefined, or a structure of `n` bytes inside the file.
bool address_ok(uint64_t addr, uint64_t n, uint64_t eof) {
  return addr == kUndefined || (addr <= eof && n <= eof - addr);
}

Type integer(const Block& b, uint64_t off, uint64_t size, uint64_t bits) {
  need((bits & ~uint64_t{0x09}) == 0 && (size == 1 || size == 2 || size == 4 || size == 8) && b.u(off + 8, 2) == 0 &&
           b.u(off + 10, 2) == 8 * size,
       b.at() + off, "an integer datatype samebits does not write (", size, " bytes, bit field ", bits, ")");
  return {Type::number, size};
}

Type ieee_float(const Block& b, uint64_t off, uint64_t size, uint64_t bits) {
  // IEEE binary32 and binary64 as HDF5 describes them: sign bit, exponent and mantissa places, bias.
  const bool f32 = size == 4, f64 = size == 8;
  const uint64_t sign = f32 ? 31 : 63;
  need((f32 || f64) && (bits & ~uint64_t{0x01}) == (0x20 | (sign << 8)) && b.u(off + 8, 2) == 0 &&
           b.u(off + 10, 2) == 8 * size && b.byte(off + 12) == (f32 ? 23 : 52) && b.byte(off + 13) == (f32 ? 8 : 11) &&
           b.byte(off + 14) == 0 && b.byte(off + 15) == (f32 ? 23 : 52) && b.u(off + 16, 4) == (f32 ? 127 : 1023),
       b.at() + off, "a floating-point datatype that is not IEEE binary32 or binary64 (", size, " bytes)");
  return {Type::number, size};
}

}  // namespace

Type parse_type(const Block& b, uint64_t off, uint64_t limit, uint64_t& used) {
  const uint64_t at = b.at() + off;
  need(limit >= 8, at, "a datatype of ", limit, " bytes (at least 8)");
  const uint8_t head = b.byte(off);
  const unsigned cls = head & 0x0f, version = head >> 4;
  const uint64_t bits = b.u(off + 1, 3), size = b.u(off + 4, 4);
  need(version == 1, at, "a datatype of version ", version, " (samebits writes version 1)");
  switch (cls) {
    case 0:
      need(limit >= 12, at, "an integer datatype in ", limit, " bytes");
      used = 12;
      return integer(b, off, size, bits);
    case 1:
      need(limit >= 20, at, "a floating-point datatype in ", limit, " bytes");
      used = 20;
      return ieee_float(b, off, size, bits);
    case 3:
      need((bits & 0x0f) <= 2 && (bits >> 4) <= 1 && size >= 1 && size <= kMaxAttributeBytes, at,
           "a string datatype of ", size, " bytes, padding ", bits & 0x0f, ", character set ", bits >> 4);
      used = 8;
      return {Type::string, size};
    case 9: {
      // A variable-length string: type 1, padding, character set; the base type is 1-byte integers.
      need((bits & 0x0f) == 1 && ((bits >> 4) & 0x0f) <= 2 && ((bits >> 8) & 0x0f) <= 1 && (bits >> 12) == 0 &&
               size == 16,
           at, "a variable-length datatype samebits does not read (bit field ", bits, ", ", size, " bytes)");
      uint64_t base_used = 0;
      const Type base = parse_type(b, off + 8, limit - 8, base_used);
      need(base.kind == Type::number && base.size == 1 && (b.u(off + 9, 3) & 0x08) == 0, at,
           "a variable-length string whose characters are not bytes");
      used = 8 + base_used;
      return {Type::vlen_string, 16};
    }
    default: need(false, at, "a datatype of class ", cls, " (samebits writes numbers and strings)");
  }
  return {};
}

Space parse_space(const Block& b, uint64_t off, uint64_t limit, uint64_t& used) {
  const uint64_t at = b.at() + off;
  need(limit >= 4, at, "a dataspace of ", limit, " bytes");
  const unsigned version = b.byte(off), rank = b.byte(off + 1), flags = b.byte(off + 2);
  need(version == 1 || version == 2, at, "a dataspace of version ", version);
  need(rank <= 32 && (flags & ~1u) == 0, at, "a dataspace of rank ", rank, " with flags ", flags,
       " (at most rank 32, no permutation)");
  Space s;
  uint64_t p = off + 8;
  if (version == 2) {
    const unsigned kind = b.byte(off + 3);
    need(kind <= 2 && (kind == 1) == (rank > 0), at, "a dataspace of type ", kind, " and rank ", rank);
    s.null = kind == 2;
    p = off + 4;
  }
  const uint64_t bytes = (p - off) + 8 * uint64_t(rank) * ((flags & 1) ? 2 : 1);
  need(bytes <= limit, at, "a dataspace of rank ", rank, " needs ", bytes, " bytes, it has ", limit);
  s.points = s.null ? 0 : 1;
  for (unsigned k = 0; k < rank; ++k) {
    const uint64_t d = b.u(p + 8 * k, 8);
    const uint64_t m = (flags & 1) ? b.u(p + 8 * (rank + k), 8) : d;
    need(d <= kMaxExtent && (m == kUndefined || (m >= d && m <= kMaxExtent)), at, "a dataspace extent of ", d,
         " (maximum ", m, ")");
    s.dims.push_back(d);
    need(d == 0 || s.points <= kMaxExtent / d, at, "a dataspace of more than 2^48 points");
    s.points *= d;
  }
  used = bytes;
  return s;
}

namespace {

void fill_value(const Block& b, unsigned type, Object& o) {
  const uint64_t at = b.at();
  uint64_t p = 0;
  bool defined = true;
  if (type == 5) {
    const unsigned version = b.byte(0);
    need(version >= 1 && version <= 3, at, "a fill value message of version ", version);
    if (version == 3) {
      const unsigned flags = b.byte(1);
      need((flags & ~0x3fu) == 0 && (flags & 0x03) >= 1 && (flags & 0x03) <= 3 && ((flags >> 2) & 0x03) <= 2, at,
           "a fill value message with flags ", flags);
      defined = (flags & 0x20) != 0;
      p = 2;
    } else {
      const unsigned alloc = b.byte(1), write = b.byte(2), fill = b.byte(3);
      need(alloc >= 1 && alloc <= 3 && write <= 2 && fill <= 1, at, "a fill value message with allocation time ", alloc,
           ", write time ", write, ", defined ", fill);
      defined = version == 1 || fill == 1;
      p = 4;
    }
  }
  if (!defined) return;
  const uint64_t size = b.u(p, 4);
  need(size <= b.size() - p - 4, at, "a fill value of ", size, " bytes in a message of ", b.size());
  o.fill_size = size;
  o.fill_at = at;
  ++o.fills;
}

void layout(const Block& b, uint64_t eof, Object& o) {
  const uint64_t at = b.at();
  need(b.byte(0) == 3, at, "a layout message of version ", int(b.byte(0)), " (samebits writes version 3)");
  const unsigned cls = b.byte(1);
  Layout l;
  if (cls == 1) {
    l.address = b.u(2, 8);
    l.size = b.u(10, 8);
    need(address_ok(l.address, l.size, eof), at, "contiguous data of ", l.size, " bytes at ", l.address,
         " outside the file's ", eof);
  } else if (cls == 2) {
    const unsigned dims = b.byte(2);
    need(dims >= 2 && dims <= 33, at, "a chunked layout of ", dims, " dimensions");
    l.chunked = true;
    l.address = b.u(3, 8);
    need(address_ok(l.address, 24, eof), at, "a chunk index at ", l.address, " outside the file's ", eof);
    uint64_t bytes = 1;
    for (unsigned k = 0; k < dims; ++k) {
      const uint64_t c = b.u(11 + 4 * k, 4);
      need(c >= 1 && bytes <= (uint64_t{1} << 30) / c, at, "a chunk extent of ", c, " (chunks of at most 1 GiB)");
      bytes *= c;
      l.chunk.push_back(c);
    }
    l.size = bytes;
  } else {
    need(false, at, "a layout of class ", cls, " (samebits writes contiguous and chunked datasets)");
  }
  o.layout = l;
  ++o.layouts;
}

void attribute(const Block& b, Object& o) {
  const uint64_t at = b.at();
  const unsigned version = b.byte(0), flags = b.byte(1);
  need(version >= 1 && version <= 3 && (version == 1 ? flags == 0 : (flags & 0x03) == 0), at,
       "an attribute message of version ", version, " with flags ", flags, " (shared parts are not read)");
  const uint64_t name_size = b.u(2, 2), type_size = b.u(4, 2), space_size = b.u(6, 2);
  const auto pad = [&](uint64_t n) { return version == 1 ? (n + 7) / 8 * 8 : n; };
  uint64_t p = version == 3 ? 9 : 8;
  if (version == 3) need(b.byte(8) <= 1, at, "an attribute name of character set ", int(b.byte(8)));
  need(name_size >= 2 && b.has(p, pad(name_size)) && b.byte(p + name_size - 1) == 0, at, "an attribute name of ",
       name_size, " bytes that does not fit or does not end with NUL");
  std::string name(name_size - 1, '\0');
  for (uint64_t k = 0; k + 1 < name_size; ++k) name[k] = char(b.byte(p + k));
  need(plain_name(name), at, "an attribute name that is not printable ASCII");
  for (const std::string& other : o.attributes) need(other != name, at, "a second attribute '", name, "'");
  p += pad(name_size);
  need(b.has(p, pad(type_size)), at, "an attribute datatype of ", type_size, " bytes past its message");
  uint64_t used = 0;
  const Type type = parse_type(b, p, type_size, used);
  p += pad(type_size);
  need(b.has(p, pad(space_size)), at, "an attribute dataspace of ", space_size, " bytes past its message");
  const Space space = parse_space(b, p, space_size, used);
  p += pad(space_size);
  need(space.points <= kMaxAttributeBytes && space.points * type.size <= kMaxAttributeBytes &&
           b.has(p, space.points * type.size),
       at, "attribute '", name, "' holds ", space.points, " values of ", type.size, " bytes, more than its message");
  if (type.kind == Type::vlen_string) {
    for (uint64_t k = 0; k < space.points; ++k) {
      const uint64_t e = p + 16 * k;
      o.strings.push_back({b.at() + e, b.u(e, 4), b.u(e + 4, 8), b.u(e + 12, 4)});
    }
  }
  o.attributes.push_back(name);
}

void link(const Block& b, uint64_t eof, Object& o) {
  const uint64_t at = b.at();
  const unsigned flags = b.byte(1);
  need(b.byte(0) == 1 && (flags & ~0x1fu) == 0, at, "a link message of version ", int(b.byte(0)), ", flags ", flags);
  uint64_t p = 2;
  unsigned type = 0;
  if (flags & 0x08) type = b.byte(p++);
  if (flags & 0x04) p += 8;
  if (flags & 0x10) need(b.byte(p++) <= 1, at, "a link name of an unknown character set");
  const int width = 1 << (flags & 0x03);
  const uint64_t length = b.u(p, width);
  p += uint64_t(width);
  need(length >= 1 && length <= 1024 && b.has(p, length), at, "a link name of ", length, " bytes past its message");
  Link l;
  for (uint64_t k = 0; k < length; ++k) l.name += char(b.byte(p + k));
  need(plain_name(l.name), at, "a link name that is not printable ASCII");
  p += length;
  if (type == 0) {
    l.hard = true;
    l.address = b.u(p, 8);
    need(l.address != kUndefined && address_ok(l.address, 16, eof), at, "a link to ", l.address, " outside the file");
  } else if (type == 1 || type == 64) {
    const uint64_t n = b.u(p, 2);
    need(n >= 1 && b.has(p + 2, n), at, "a link value of ", n, " bytes past its message");
    if (type == 64) {
      // Version and flags 0, then the file's and the object's names, each ending with NUL: the
      // first NUL after byte 0 ends the file's name, the next one is the value's last byte.
      // (Scanning loops, not a count: clang 14 crashes vectorising a byte count under -mavx512f.)
      uint64_t k = 1;
      while (k < n && b.byte(p + 2 + k) != 0) ++k;
      const uint64_t file_end = k++;
      while (k < n && b.byte(p + 2 + k) != 0) ++k;
      need(b.byte(p + 2) == 0 && file_end + 1 < n && k == n - 1, at, "an external link value that is not two names");
    }
  } else {
    need(false, at, "a link of type ", type, " (hard, soft and external links only)");
  }
  for (const Link& other : o.links) need(other.name != l.name, at, "a second link '", l.name, "'");
  o.links.push_back(l);
}

}  // namespace

void parse_message(const Block& b, unsigned type, uint64_t eof, Object& o) {
  const uint64_t at = b.at();
  uint64_t used = 0;
  switch (type) {
    case 0x00: return;  // nil
    case 0x01:
      o.space = parse_space(b, 0, b.size(), used);
      ++o.spaces;
      return;
    case 0x02: {  // link info: compact storage, the links are link messages of this header
      const unsigned flags = b.byte(1);
      need(b.byte(0) == 0 && (flags & ~3u) == 0, at, "a link info message of version ", int(b.byte(0)), ", flags ",
           flags);
      const uint64_t p = (flags & 1) ? 10 : 2;
      need(b.u(p, 8) == kUndefined && b.u(p + 8, 8) == kUndefined && (!(flags & 2) || b.u(p + 16, 8) == kUndefined), at,
           "a group in dense link storage (a fractal heap), which samebits does not write");
      ++o.link_infos;
      return;
    }
    case 0x03:
      o.type = parse_type(b, 0, b.size(), used);
      ++o.types;
      return;
    case 0x04:
    case 0x05: return fill_value(b, type, o);
    case 0x06: return link(b, eof, o);
    case 0x08: return layout(b, eof, o);
    case 0x0a: {  // group info
      const unsigned flags = b.byte(1);
      need(b.byte(0) == 0 && (flags & ~3u) == 0, at, "a group info message of version ", int(b.byte(0)));
      if (flags & 1)
        need(b.u(2, 2) >= b.u(4, 2), at, "a group info message whose compact limit is below its dense one");
      ++o.group_infos;
      return;
    }
    case 0x0c: return attribute(b, o);
    case 0x10: {
      const uint64_t addr = b.u(0, 8), length = b.u(8, 8);
      need(addr != kUndefined && address_ok(addr, length, eof) && length >= 8, at, "a continuation of ", length,
           " bytes at ", addr, " outside the file's ", eof);
      o.continuations.emplace_back(addr, length);
      return;
    }
    case 0x11:
      o.table_btree = b.u(0, 8);
      o.table_heap = b.u(8, 8);
      ++o.tables;
      return;
    case 0x12: need(b.byte(0) == 1, at, "a modification time message of version ", int(b.byte(0))); return;
    default:
      need(false, at, "an object-header message of type ", type,
           " (samebits writes none: filters, external files, shared or dense storage, ...)");
  }
}

}  // namespace sb::h5::walk
