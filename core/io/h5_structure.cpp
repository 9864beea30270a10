// h5_structure.hpp: the walk. From the superblock (version 0, 8-byte addresses and lengths, the
// default B-tree widths) down every hard link: object headers (version 1: prefix, chunks,
// continuations, the message count), groups (symbol table: B-tree nodes of strictly decreasing
// level, symbol nodes, the local heap with its free list and every name; or link messages),
// datasets (datatype, dataspace and layout agreeing; the chunk index B-tree down to every chunk:
// unfiltered, of the chunk's size, inside the file) and the global-heap objects variable-length
// strings name. Each structure is read with pread into a buffer of the size the format fixes, every
// node is visited once (a node reached twice, a cycle, is refused), and the work is bounded.
#include "samebits/core/io/h5_structure.hpp"

#include <fcntl.h>

#include <iterator>
#include <map>
#include <set>

#include "h5_walk.hpp"
#include "posix_file.hpp"

namespace sb::h5 {
namespace walk {
namespace {

constexpr uint64_t kSuperblockBytes = 96;
constexpr unsigned kGroupLeafK = 4, kGroupInternalK = 16, kChunkK = 32;  // HDF5's defaults, superblock v0
constexpr uint64_t kMaxHeapBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxHeaderChunk = uint64_t{1} << 20;
constexpr int kMaxDepth = 64, kMaxLevel = 32;
constexpr uint64_t kMaxStructures = uint64_t{1} << 22;

// The local heap of a symbol-table group: its data segment, from which names are taken.
struct LocalHeap {
  Block data;
  std::string name(uint64_t offset, uint64_t at) const {
    std::string out;
    for (uint64_t k = offset;; ++k) {
      need(k < data.size(), at, "a name at offset ", offset, " runs past the end of its local heap");
      const char c = char(data.byte(k));
      if (c == '\0') break;
      out += c;
    }
    return out;
  }
};

class Walker {
 public:
  Walker(const run::Fd& file, const std::string& path, uint64_t content)
      : file_(file), path_(path), content_(content) {}

  void run() {
    need(content_ >= kSuperblockBytes, 0, "a file of ", content_, " bytes has no room for a superblock");
    eof_ = content_;
    const Block s = read(0, kSuperblockBytes);
    need(s.starts_with(0, "\x89HDF\r\n\x1a\n"), 0, "no HDF5 signature");
    need(s.byte(8) == 0 && s.byte(9) == 0 && s.byte(10) == 0 && s.byte(11) == 0 && s.byte(12) == 0, 8,
         "a superblock of version ", int(s.byte(8)), " (samebits writes version 0)");
    need(s.byte(13) == 8 && s.byte(14) == 8 && s.byte(15) == 0, 13, "addresses of ", int(s.byte(13)),
         " and lengths of ", int(s.byte(14)), " bytes (samebits writes 8)");
    need(s.u(16, 2) == kGroupLeafK && s.u(18, 2) == kGroupInternalK && s.u(20, 4) == 0, 16, "B-tree widths ",
         s.u(16, 2), " and ", s.u(18, 2), " or flags ", s.u(20, 4), " (HDF5's defaults 4, 16, 0)");
    need(s.u(24, 8) == 0 && s.u(32, 8) == kUndefined && s.u(48, 8) == kUndefined, 24,
         "a base address, free-space or driver block (samebits writes none)");
    const uint64_t end = s.u(40, 8);
    need(end >= kSuperblockBytes && end <= content_, 40, "an end of file at ", end, ", the content holds ", content_,
         " bytes");
    eof_ = end;
    const Entry root = entry(s, 56);
    need(root.name_offset == 0, 56, "a root entry with a name");
    object(root.address, 0);
    for (const VlenRef& r : strings_) global_heap_object(r);
  }

 private:
  // A symbol-table entry (superblock root, symbol nodes): name offset, object, cache type, scratch.
  struct Entry {
    uint64_t name_offset, address, cache, btree, heap;
  };
  Entry entry(const Block& b, uint64_t off) const {
    const Entry e{b.u(off, 8), b.u(off + 8, 8), b.u(off + 16, 4), b.u(off + 24, 8), b.u(off + 32, 8)};
    // A cached symbol table (cache type 1) is a hint HDF5 uses only when the group's own symbol-table
    // message is invalid, which the walk refuses; it goes stale when a group becomes a new-style one.
    need(e.cache <= 1 && b.u(off + 20, 4) == 0, b.at() + off, "a symbol-table entry of cache type ", e.cache,
         " (samebits writes hard links only)");
    need(e.address != kUndefined && e.address <= eof_ && eof_ - e.address >= 16, b.at() + off,
         "a symbol-table entry pointing to ", e.address, " outside the file");
    return e;
  }
  Block read(uint64_t at, uint64_t n) {
    need(at <= eof_ && n <= eof_ - at, at, "a structure of ", n, " bytes at ", at, " past the end of file ", eof_);
    need(++structures_ <= kMaxStructures, at, "more than 2^22 structures");
    std::vector<uint8_t> bytes(n);
    run::read_at(file_, path_, bytes.data(), n, at);
    return Block(at, std::move(bytes));
  }

  // An object header (version 1) and what its messages point to.
  void object(uint64_t at, int depth) {
    need(depth <= kMaxDepth, at, "groups nested deeper than ", kMaxDepth);
    if (!objects_.insert(at).second) return;  // a second hard link to an object walked already
    const Block prefix = read(at, 16);
    need(prefix.byte(0) == 1 && prefix.byte(1) == 0 && prefix.u(12, 4) == 0, at, "an object header of version ",
         int(prefix.byte(0)), " (samebits writes version 1)");
    const uint64_t count = prefix.u(2, 2), refs = prefix.u(4, 4), size = prefix.u(8, 4);
    need(refs >= 1 && refs <= 65536, at, "an object header with reference count ", refs);
    Object o;
    o.at = at;
    uint64_t messages = 0;
    std::vector<std::pair<uint64_t, uint64_t>> chunks{{at + 16, size}};
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      need(c < 1024, at, "an object header of more than 1024 chunks");
      const auto [where, length] = chunks[c];
      need(length % 8 == 0 && length <= kMaxHeaderChunk && (c > 0 || length >= 8), where, "an object header chunk of ",
           length, " bytes");
      const auto next = chunk_ranges_.lower_bound(where);
      need((next == chunk_ranges_.end() || where + length <= next->first) &&
               (next == chunk_ranges_.begin() || std::prev(next)->first + std::prev(next)->second <= where),
           where, "an object header chunk overlapping another");
      chunk_ranges_.emplace(where, length);
      const Block chunk = read(where, length);
      for (uint64_t p = 0; p < length;) {
        need(length - p >= 8, where + p, "an object header message header past the end of its chunk");
        const unsigned type = unsigned(chunk.u(p, 2)), flags = chunk.byte(p + 4);
        const uint64_t body = chunk.u(p + 2, 2);
        need(body % 8 == 0 && body <= length - p - 8, where + p, "a message of ", body, " bytes in a chunk with ",
             length - p - 8, " left");
        need((flags & ~0x45u) == 0, where + p, "a message with flags ", flags, " (shared or unknown messages)");
        const std::size_t before = o.continuations.size();
        parse_message(chunk.sub(p + 8, body), type, eof_, o);
        for (std::size_t k = before; k < o.continuations.size(); ++k) chunks.push_back(o.continuations[k]);
        ++messages;
        p += 8 + body;
      }
    }
    need(messages == count, at, "an object header announcing ", count, " messages holding ", messages);
    strings_.insert(strings_.end(), o.strings.begin(), o.strings.end());
    const bool dataset = o.layouts > 0, stab = o.tables > 0, compact = o.link_infos > 0;
    need(o.types <= 1 && o.spaces <= 1 && o.layouts <= 1 && o.fills <= 1 && o.tables <= 1 && o.link_infos <= 1 &&
             o.group_infos <= 1,
         at, "an object header with a repeated message");
    need(int(dataset) + int(stab) + int(compact) == 1, at,
         "an object that is not one group or one dataset (named datatypes are not read)");
    need(o.links.empty() || compact, at, "link messages outside a group with link info");
    if (dataset) return dataset_storage(o);
    if (stab) return symbol_table(o, depth);
    for (const Link& l : o.links) {
      if (l.hard) object(l.address, depth + 1);
    }
  }

  void dataset_storage(const Object& o) {
    const uint64_t at = o.at;
    need(o.types == 1 && o.spaces == 1 && o.type.kind == Type::number && !o.space.null && !o.space.dims.empty(), at,
         "a dataset that is not an array of numbers");
    need(o.fill_size == 0 || o.fill_size == o.type.size, o.fill_at, "a fill value of ", o.fill_size,
         " bytes for elements of ", o.type.size);
    const Layout& l = o.layout;
    const uint64_t rank = o.space.dims.size();
    if (!l.chunked) {
      need(l.address == kUndefined || l.size == o.space.points * o.type.size, at, "contiguous data of ", l.size,
           " bytes for ", o.space.points, " elements of ", o.type.size);
      return;
    }
    need(l.chunk.size() == rank + 1 && l.chunk.back() == o.type.size, at, "chunks of rank ", l.chunk.size() - 1,
         " and elements of ", l.chunk.back(), " for a dataset of rank ", rank, " and elements of ", o.type.size);
    if (l.address != kUndefined) chunk_node(l.address, -1, l);
  }

  // A chunk index B-tree node (type 1): keys (chunk size, filter mask, offsets), children.
  void chunk_node(uint64_t at, int level, const Layout& l) {
    const uint64_t dims = l.chunk.size(), key = 8 + 8 * dims;
    const Block b = node(at, 1, 2 * kChunkK, key, level);
    const int here = b.byte(5);
    const uint64_t used = b.u(6, 2);
    for (uint64_t k = 0; k < used; ++k) {
      const uint64_t left = 24 + k * (key + 8), child = b.u(left + key, 8);
      need(b.u(left + 8 + 8 * (dims - 1), 8) == 0, b.at() + left, "a chunk key whose last offset is not 0");
      for (uint64_t d = 0; d + 1 < dims; ++d) {
        const uint64_t offset = b.u(left + 8 + 8 * d, 8);
        need(offset % l.chunk[d] == 0 && offset < (uint64_t{1} << 48), b.at() + left, "a chunk offset ", offset,
             " that is not a multiple of the chunk extent ", l.chunk[d]);
      }
      if (here > 0) {
        chunk_node(child, here - 1, l);
        continue;
      }
      const uint64_t size = b.u(left, 4), mask = b.u(left + 4, 4);
      need(size == l.size && mask == 0 && child != kUndefined && child <= eof_ && size <= eof_ - child, b.at() + left,
           "a chunk of ", size, " bytes at ", child, " (filter mask ", mask, "), expected ", l.size,
           " unfiltered bytes inside the file");
    }
  }

  // A B-tree node (version 1) of `type` with at most `entries` children: read whole (HDF5 reads the
  // node's full size), signature, type, level (`level` unless it is the root, -1), entries, and
  // siblings; each node once.
  Block node(uint64_t at, unsigned type, uint64_t entries, uint64_t key, int level) {
    need(nodes_.insert(at).second, at, "a B-tree node reached twice (a cycle?)");
    Block b = read(at, 24 + entries * 8 + (entries + 1) * key);
    const int here = b.byte(5);
    need(b.starts_with(0, "TREE") && b.byte(4) == type, at, "no B-tree node of type ", type, " here");
    need(here <= kMaxLevel && (level < 0 || here == level), at, "a B-tree node of level ", here,
         level < 0 ? "" : ", expected " + std::to_string(level));
    need(b.u(6, 2) <= entries && (b.u(6, 2) >= 1 || level < 0), at, "a B-tree node of ", b.u(6, 2),
         " entries (at most ", entries, ")");
    for (const uint64_t sibling : {b.u(8, 8), b.u(16, 8)}) {
      need(sibling == kUndefined || (sibling <= eof_ && eof_ - sibling >= 24), at, "a B-tree sibling at ", sibling,
           " outside the file");
    }
    return b;
  }

  // An old-style group: its local heap, B-tree (type 0, keys: heap offsets) and symbol nodes.
  void symbol_table(const Object& o, int depth) {
    need(!heaps_.count(o.table_heap), o.at, "a local heap shared by two groups");
    const LocalHeap& heap = heaps_[o.table_heap] = local_heap(o.table_heap);
    group_node(o.table_btree, -1, heap, depth);
  }

  void group_node(uint64_t at, int level, const LocalHeap& heap, int depth) {
    const Block b = node(at, 0, 2 * kGroupInternalK, 8, level);
    const int here = b.byte(5);
    const uint64_t used = b.u(6, 2);
    for (uint64_t k = 0; k <= used; ++k) heap.name(b.u(24 + 16 * k, 8), b.at() + 24 + 16 * k);
    for (uint64_t k = 0; k < used; ++k) {
      const uint64_t child = b.u(24 + 16 * k + 8, 8);
      if (here > 0) group_node(child, here - 1, heap, depth);
      else symbol_node(child, heap, depth);
    }
  }

  void symbol_node(uint64_t at, const LocalHeap& heap, int depth) {
    need(nodes_.insert(at).second, at, "a symbol node reached twice (a cycle?)");
    const Block b = read(at, 8 + 2 * kGroupLeafK * 40);
    const uint64_t symbols = b.u(6, 2);
    need(b.starts_with(0, "SNOD") && b.byte(4) == 1 && b.byte(5) == 0 && symbols >= 1 && symbols <= 2 * kGroupLeafK, at,
         "no symbol node of 1 to ", 2 * kGroupLeafK, " entries here");
    for (uint64_t k = 0; k < symbols; ++k) {
      const Entry e = entry(b, 8 + 40 * k);
      need(plain_name(heap.name(e.name_offset, at + 8 + 40 * k)), at + 8 + 40 * k,
           "a member name that is not printable ASCII");
      object(e.address, depth + 1);
    }
  }

  // A local heap: prefix, data segment inside the file, free list inside the segment, acyclic.
  LocalHeap local_heap(uint64_t at) {
    const Block p = read(at, 32);
    const uint64_t size = p.u(8, 8), free = p.u(16, 8), data = p.u(24, 8);
    need(p.starts_with(0, "HEAP") && p.byte(4) == 0 && p.u(5, 3) == 0, at, "no local heap of version 0 here");
    need(size >= 8 && size <= kMaxHeapBytes && data != kUndefined && data <= eof_ && size <= eof_ - data, at,
         "a local heap of ", size, " bytes at ", data, " outside the file's ", eof_);
    LocalHeap h{read(data, size)};
    std::set<uint64_t> seen;
    for (uint64_t f = free; f != 1;) {  // 1: the end of the free list
      need(f % 8 == 0 && size >= 16 && f <= size - 16 && seen.insert(f).second, at, "a local heap free block at ", f,
           " outside its heap or on a cycle");
      const uint64_t next = h.data.u(f + 0, 8), bytes = h.data.u(f + 8, 8);
      need(bytes >= 16 && bytes <= size - f, at, "a local heap free block of ", bytes, " bytes");
      f = next;
    }
    return h;
  }

  // A variable-length string's bytes: an object of its length in a global heap collection.
  void global_heap_object(const VlenRef& r) {
    if (r.collection == 0 && r.length == 0) return;  // an empty string HDF5 keeps nowhere
    need(r.collection != kUndefined && r.collection <= eof_ && eof_ - r.collection >= 4096, r.at,
         "a variable-length string in a global heap at ", r.collection, " outside the file");
    auto c = collections_.find(r.collection);
    if (c == collections_.end()) c = collections_.emplace(r.collection, collection(r.collection)).first;
    const auto o = c->second.find(r.index);
    need(r.index != 0 && o != c->second.end() && o->second == r.length, r.at, "a variable-length string of ", r.length,
         " bytes whose global heap object ", r.index, " is missing or of another size");
  }

  // A global heap collection (version 1): objects (index, references, size, data padded to 8) that
  // tile it, the free space (index 0) last. Index → size.
  std::map<uint64_t, uint64_t> collection(uint64_t at) {
    const Block head = read(at, 16);
    const uint64_t size = head.u(8, 8);
    need(head.starts_with(0, "GCOL") && head.byte(4) == 1 && size >= 4096 && size <= kMaxHeapBytes && size <= eof_ - at,
         at, "no global heap collection of 4 KiB to 64 MiB inside the file here");
    const Block b = read(at, size);
    std::map<uint64_t, uint64_t> objects;
    for (uint64_t p = 16; p < size;) {
      if (size - p < 16) break;  // too small for an object: free space
      const uint64_t index = b.u(p, 2), bytes = b.u(p + 8, 8);
      if (index == 0) {  // free space, its header included: it must end the collection
        need(bytes == size - p, at + p, "global heap free space of ", bytes, " bytes where ", size - p, " are left");
        break;
      }
      need(bytes <= size - p - 16 && (bytes + 7) / 8 * 8 <= size - p - 16 && objects.emplace(index, bytes).second,
           at + p, "a global heap object ", index, " of ", bytes, " bytes past its collection, or a second one");
      p += 16 + (bytes + 7) / 8 * 8;
    }
    return objects;
  }

  const run::Fd& file_;
  const std::string& path_;
  uint64_t content_, eof_ = 0, structures_ = 0;
  std::set<uint64_t> objects_, nodes_;
  std::map<uint64_t, uint64_t> chunk_ranges_;  // object header chunks: start → length
  std::map<uint64_t, LocalHeap> heaps_;
  std::vector<VlenRef> strings_;
  std::map<uint64_t, std::map<uint64_t, uint64_t>> collections_;
};

}  // namespace
}  // namespace walk

void check_structure(const std::string& path, uint64_t content_bytes) {
  const run::Fd file(path, O_RDONLY);
  try {
    walk::Walker(file, path, content_bytes).run();
  } catch (const walk::Damage& d) {
    SB_FAIL(path, ": its HDF5 structure is damaged or not one samebits writes: ", d.what, " at byte ", d.at,
            " (refused before HDF5 read it)");
  }
}

}  // namespace sb::h5
