// The seal of the files samebits writes (run files, checkpoints): a 32-byte trailer after the
// HDF5 content holding its length and XXH3-64 hash, appended before the atomic rename and checked
// before HDF5 parses the file, so a truncated, damaged or edited file is refused with one clear
// error instead of reaching HDF5's decoders. HDF5 and h5py ignore bytes past the end of the HDF5
// content: sealed files open everywhere. Layout (docs/FORMAT.md): "SBSEAL01", u64 LE content
// bytes, u64 LE XXH3-64 of the content, "SAMEBITS".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb::run {

constexpr std::size_t kSealBytes = 32;

// Writes `image` (a complete HDF5 file, e.g. h5::File::image()) and its seal to `path`
// atomically: temporary file, fsync, rename (h5::write_file_atomically). Write errors (a full
// disk) are sb::Error naming the file; `path` is then left as it was. Returns the content's
// XXH3-64 (the seal's hash).
uint64_t write_sealed_file(const std::string& path, const std::vector<std::byte>& image);

// Appends the seal to `path`, a complete and closed HDF5 file (an earlier seal is an error): the
// way to seal a file edited by hand (after unseal_file).
// Returns the content's XXH3-64.
uint64_t seal_file(const std::string& path);

// Appends the seal of content `length` bytes long with XXH3-64 `hash`, computed by the caller
// while it wrote the file (store_data.hpp): `path` must be exactly `length` bytes.
void append_seal(const std::string& path, uint64_t length, uint64_t hash);

// Throws sb::Error naming the file and what is wrong (no seal: truncated or written by another
// program; wrong length; wrong hash: bytes changed) unless `path` carries a valid seal. Returns the content's XXH3-64.
uint64_t check_seal(const std::string& path);

// check_seal, then removes the seal so that HDF5 may modify the file in place (seal it again
// afterwards with seal_file).
void unseal_file(const std::string& path);

}  // namespace sb::run
