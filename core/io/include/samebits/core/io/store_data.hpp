// store_data.hpp: the data of a store file, written after HDF5 has laid the file out. HDF5 writes
// the metadata and reserves each dataset's bytes (h5::Group::reserve_dataset); samebits then
// streams the file once in file order, 8 MiB at a time: the reserved regions from the caller's
// buffers, the rest (metadata, padding) as HDF5 left it, hashing each window for the seal and
// writing it with direct I/O where the file system allows (no page-cache copy of gigabytes of
// state; otherwise ordinary writes). The file's bytes are the same either way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/io/checkpoint.hpp"

namespace sb::run {

// What write_store_data did: the XXH3-64 of the file's `length` bytes (the seal's hash:
// run_seal.hpp append_seal) and how many of them went by direct I/O (0 where the file system
// refused it, or direct = false).
struct StoreDataWrite {
  uint64_t digest = 0;
  uint64_t direct_bytes = 0;
};

// Fills the `raw` regions of `path`, a closed HDF5 file of `length` bytes. Regions must lie inside
// the file and not overlap. direct = false: page-cache writes only (tests compare the two).
StoreDataWrite write_store_data(const std::string& path, uint64_t length, std::vector<RawWrite> raw,
                                bool direct = true);

}  // namespace sb::run
