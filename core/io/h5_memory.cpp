// h5.hpp: in-memory files over HDF5's core driver (backing store off) and their byte images. The
// run store builds each file it writes in memory and writes the image itself (run_seal.hpp), so
// disk errors are plain errno failures outside HDF5.
#include <filesystem>

#include "h5_detail.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

using detail::check_id;
using detail::check_status;

namespace {

// A file-access property list selecting the core driver without backing store, and no file lock:
// the file on disk is only read, so readers holding it open (h5py, another samebits) do not block;
// the format versions pinned as for files on disk.
Handle core_access(const std::string& name) {
  Handle fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), name, "cannot make a file-access property list"));
  check_status(H5Pset_fapl_core(fapl.id(), std::size_t{1} << 20, 0), name, "cannot select the in-memory driver");
  check_status(H5Pset_file_locking(fapl.id(), false, true), name, "cannot turn off file locking");
  detail::pin_format_versions(fapl.id(), name);
  return fapl;
}

}  // namespace

File File::create_in_memory(const std::string& name) {
  detail::init_library();
  const Handle fapl = core_access(name);
  const Handle fcpl(check_id(H5Pcreate(H5P_FILE_CREATE), name, "cannot make a file-creation property list"));
  detail::compact_links(fcpl.id(), name);
  File f;
  f.file_ = name;
  f.path_ = "/";
  f.file_handle_ = Handle(check_id(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, fcpl.id(), fapl.id()), name,
                                   "cannot create the in-memory HDF5 file"));
  f.handle_ = Handle(check_id(H5Gopen2(f.file_handle_.id(), "/", H5P_DEFAULT), name, "cannot open the root group"));
  return f;
}

File File::open_in_memory(const std::string& path) {
  detail::init_library();
  std::error_code ec;
  SB_CHECK(std::filesystem::is_regular_file(path, ec), "HDF5 file '", path,
           "' does not exist or is not a regular file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) detail::fail(path, "cannot read the file (check its permissions)");
  SB_CHECK(is_hdf5 > 0, "'", path, "' is not an HDF5 file (no HDF5 signature)");
  const Handle fapl = core_access(path);
  File f;
  f.file_ = path;
  f.path_ = "/";
  f.file_handle_ = Handle(check_id(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.id()), path,
                                   "cannot open the HDF5 file into memory (damaged?)"));
  f.handle_ = Handle(
      check_id(H5Gopen2(f.file_handle_.id(), "/", H5P_DEFAULT), path, "cannot open the root group (damaged file)"));
  return f;
}

std::vector<std::byte> File::image() {
  flush();  // H5Fget_file_image alone can return an image with stale object headers (1.10.8)
  const ssize_t size = H5Fget_file_image(file_handle_.id(), nullptr, 0);
  check_status(size < 0 ? -1 : 0, file_, "cannot size the file image");
  std::vector<std::byte> bytes(static_cast<std::size_t>(size));
  const ssize_t got = H5Fget_file_image(file_handle_.id(), bytes.data(), bytes.size());
  check_status(got == size ? 0 : -1, file_, "cannot copy the file image");
  return bytes;
}

}  // namespace sb::h5
