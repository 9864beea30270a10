// The walk of an untrusted HDF5 file's structure before HDF5 opens it. HDF5 1.10 trusts the sizes,
// counts and addresses its metadata holds (a damaged local-heap size becomes a 2^55-byte
// allocation, a global-heap object larger than its string an overlapping copy), so every structure
// HDF5 decodes when samebits reads the file is checked first, without HDF5: the version-0
// superblock; every object header reachable from the root group by hard links (version 1, its
// chunks and continuations, every message: dataspace, datatype, fill value, layout, attribute,
// link info, group info, link, symbol table); the symbol-table B-trees, their nodes and local
// heaps (the free list too); the chunk index B-trees down to every chunk; and the global-heap
// objects of variable-length string attributes. Each field must be one the HDF5 file format allows
// and samebits writes (integers, IEEE floats and strings; contiguous or chunked unfiltered data;
// compact or symbol-table groups), and every size and address must fit the structure and the file.
// Contract: a file check_structure accepts is one whose metadata HDF5 decodes within bounds; the
// values (attributes, data) are still checked by the readers (h5.hpp) against the schema.
#pragma once
#include <cstdint>
#include <string>

namespace sb::h5 {

// Throws sb::Error "<path>: its HDF5 structure is damaged or not one samebits writes: <what> at
// byte N (refused before HDF5 read it)" unless the HDF5 content of `path` — its first
// `content_bytes` bytes, the rest being the seal — passes the walk.
void check_structure(const std::string& path, uint64_t content_bytes);

}  // namespace sb::h5
