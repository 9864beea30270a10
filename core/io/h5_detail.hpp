// Internals shared by core/io/h5_*.cpp: HDF5 error capture, type mapping and plist handles.
// Only these files include hdf5.h; users of h5.hpp never see it.
#pragma once
#include <hdf5.h>

#include <string>
#include <string_view>
#include <vector>

#include "samebits/core/io/h5.hpp"

namespace sb::h5::detail {

static_assert(sizeof(hid_t) == sizeof(int64_t), "h5.hpp keeps hid_t in an int64_t");

// Turns off HDF5's printing of error stacks (once per process); every entry point calls it.
void init_library();

// The current HDF5 error stack as one line ("H5Dopen2: unable to open dataset: object 'x'
// doesn't exist"), then cleared. Empty when HDF5 recorded nothing.
std::string error_stack();

// Throws sb::Error "<where>: <what> (HDF5: <stack>)".
[[noreturn]] void fail(const std::string& where, const std::string& what);

// HDF5 returns negative values on failure.
inline int64_t check_id(int64_t id, const std::string& where, const std::string& what) {
  if (id < 0) fail(where, what);
  return id;
}
inline void check_status(herr_t status, const std::string& where, const std::string& what) {
  if (status < 0) fail(where, what);
}

// Extents as HDF5 takes them (hsize_t is unsigned long long, Dims holds uint64_t).
using HDims = std::vector<hsize_t>;
inline HDims hdims(const Dims& dims) { return HDims(dims.begin(), dims.end()); }

// Sets a group- or file-creation property list so that the group (or the root group) keeps its
// links as link messages in its object header, never in HDF5's dense storage (fractal heap and
// version-2 B-trees, decoders h5::check_structure does not admit): creation order tracked, which
// makes HDF5 write a new-style group from the start, and compact up to 65535 links.
void compact_links(hid_t plist, const std::string& where);

// Pins the file-format versions on a file-access list to what core/io/h5_structure.cpp walks
// (superblock 0, object headers 1, layout 3): low bound EARLIEST, high bound V18. HDF5 1.12 and
// 1.14 write the same structures as 1.10 then, instead of newer ones a later default might pick.
void pin_format_versions(hid_t fapl, const std::string& where);

// Little-endian file type and native memory type of a DType.
hid_t file_type(DType dtype);
hid_t memory_type(DType dtype);

// The DType of an HDF5 datatype (either byte order); false when it is none of them.
bool classify(hid_t type, DType& out);
// "f32" for supported types, else a description ("16-bit float", "string", "compound") for messages.
std::string describe_type(hid_t type);

}  // namespace sb::h5::detail
