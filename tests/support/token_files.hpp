// Token files as others write them, for the tests of reading them: an HDF5 file with one 1-D
// dataset written through HDF5's C API with its defaults (superblock 0, version-1 object headers,
// an old-style root group: what h5py writes by default), contiguous or chunked.
#pragma once
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sbt {

// `tokens` as the dataset `name` of a new file at `path`, stored as `type` (H5T_STD_U16LE, …);
// chunk > 0: chunked in chunks of that many tokens (and gzip-compressed when `gzip`).
inline void write_token_h5(const std::string& path, const std::string& name, hid_t type,
                           const std::vector<int32_t>& tokens, hsize_t chunk = 0, bool gzip = false) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = tokens.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk > 0) H5Pset_chunk(dcpl, 1, &chunk);
  if (gzip) H5Pset_deflate(dcpl, 4);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);  // "/train/tokens": the group /train as well
  const hid_t ds = H5Dcreate2(f, name.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, tokens.data()) >= 0);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Pclose(lcpl);
  H5Sclose(space);
  REQUIRE(H5Fclose(f) >= 0);
}

}  // namespace sbt
