// h5.hpp: error capture, type mapping, handles, groups and files. Every HDF5 call's failure is
// turned into an sb::Error naming the file and object path; HDF5 itself prints nothing.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>

#include "h5_detail.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

namespace detail {

void init_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

namespace {
herr_t collect_error(unsigned, const H5E_error2_t* entry, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  std::string line = entry->desc != nullptr ? entry->desc : "";
  char minor[160] = {0};
  if (H5Eget_msg(entry->min_num, nullptr, minor, sizeof minor) > 0 && line.find(minor) == std::string::npos) {
    line += line.empty() ? minor : std::string(" [") + minor + "]";
  }
  if (!line.empty() && (lines->empty() || lines->back() != line)) lines->push_back(line);
  return 0;
}
}  // namespace

std::string error_stack() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += "; ";
    out += line;
  }
  return out;
}

void fail(const std::string& where, const std::string& what) {
  const std::string stack = error_stack();
  SB_FAIL(where, ": ", what, stack.empty() ? "" : " (HDF5: " + stack + ")");
}

void compact_links(hid_t plist, const std::string& where) {
  check_status(H5Pset_link_creation_order(plist, H5P_CRT_ORDER_TRACKED), where, "cannot track link creation order");
  check_status(H5Pset_link_phase_change(plist, 65535, 6), where, "cannot keep links compact");
}

void pin_format_versions(hid_t fapl, const std::string& where) {
  check_status(H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18), where,
               "cannot pin the file-format versions");
}

hid_t file_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return H5T_IEEE_F32LE;
    case DType::f64: return H5T_IEEE_F64LE;
    case DType::i32: return H5T_STD_I32LE;
    case DType::i64: return H5T_STD_I64LE;
    case DType::u64: return H5T_STD_U64LE;
    case DType::u8: return H5T_STD_U8LE;
    case DType::bf16:
    case DType::fp16: break;
  }
  SB_FAIL("h5: a dataset cannot hold dtype ", dtype_name(dtype));
}

hid_t memory_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::i64: return H5T_NATIVE_INT64;
    case DType::u64: return H5T_NATIVE_UINT64;
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::bf16:
    case DType::fp16: break;
  }
  SB_FAIL("h5: a dataset cannot hold dtype ", dtype_name(dtype));
}

bool classify(hid_t type, DType& out) {
  struct Known {
    hid_t le, be;
    DType dtype;
  };
  const Known known[] = {
      {H5T_IEEE_F32LE, H5T_IEEE_F32BE, DType::f32}, {H5T_IEEE_F64LE, H5T_IEEE_F64BE, DType::f64},
      {H5T_STD_I32LE, H5T_STD_I32BE, DType::i32},   {H5T_STD_I64LE, H5T_STD_I64BE, DType::i64},
      {H5T_STD_U64LE, H5T_STD_U64BE, DType::u64},   {H5T_STD_U8LE, H5T_STD_U8BE, DType::u8},
  };
  for (const auto& k : known) {
    if (H5Tequal(type, k.le) > 0 || H5Tequal(type, k.be) > 0) {
      out = k.dtype;
      return true;
    }
  }
  H5Eclear2(H5E_DEFAULT);
  return false;
}

std::string describe_type(hid_t type) {
  DType dtype;
  if (classify(type, dtype)) return std::string(dtype_name(dtype));
  const std::size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return std::to_string(bits) + "-bit " + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned" : "signed") + " integer";
    case H5T_FLOAT: return std::to_string(bits) + "-bit float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    default: H5Eclear2(H5E_DEFAULT); return "an unsupported HDF5 type";
  }
}

}  // namespace detail

using detail::check_id;
using detail::check_status;
using detail::fail;

std::string dims_string(const Dims& dims) {
  std::string out = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += dims[i] == kAny ? "*" : std::to_string(dims[i]);
  }
  return out + ")";
}

// ---- Handle ----------------------------------------------------------------------------------

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.release();
  }
  return *this;
}

void Handle::reset() {
  if (id_ < 0) return;
  const hid_t id = release();
  switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: H5Idec_ref(id); break;
  }
  H5Eclear2(H5E_DEFAULT);
}

// ---- Object basics ---------------------------------------------------------------------------

void Object::require_open() const {
  SB_CHECK(handle_.valid(), file_.empty() ? std::string("h5") : where(),
           ": the object is closed or empty (open it from an open File)");
}

// ---- Group -----------------------------------------------------------------------------------

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return parts;
}

// H5I type of the object at `path` under `loc`, or H5I_BADID when nothing is there.
H5I_type_t object_type(hid_t loc, std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::string prefix = absolute ? "/" : "";
  H5I_type_t type = absolute ? H5I_GROUP : H5I_BADID;
  for (const auto& part : split_path(path)) {
    if (!prefix.empty() && type != H5I_GROUP) return H5I_BADID;  // a parent is not a group
    prefix += (prefix.empty() || prefix.back() == '/') ? part : "/" + part;
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return H5I_BADID;
    }
    const hid_t obj = H5Oopen(loc, prefix.c_str(), H5P_DEFAULT);
    if (obj < 0) {
      H5Eclear2(H5E_DEFAULT);
      return H5I_BADID;  // e.g. a dangling soft link
    }
    type = H5Iget_type(obj);
    H5Oclose(obj);
  }
  return type;
}

const char* type_word(H5I_type_t type) {
  return type == H5I_GROUP ? "group" : type == H5I_DATASET ? "dataset" : "named datatype";
}

Handle plist(hid_t cls) { return Handle(H5Pcreate(cls)); }

}  // namespace

std::string Group::child_path(std::string_view path) const {
  if (!path.empty() && path.front() == '/') return std::string(path);
  return path_ == "/" ? "/" + std::string(path) : path_ + "/" + std::string(path);
}

bool Group::has(std::string_view path) const {
  require_open();
  return object_type(id(), path) != H5I_BADID;
}

bool Group::is_group(std::string_view path) const {
  require_open();
  return object_type(id(), path) == H5I_GROUP;
}

bool Group::is_dataset(std::string_view path) const {
  require_open();
  return object_type(id(), path) == H5I_DATASET;
}

std::vector<std::string> Group::names() const {
  require_open();
  H5G_info_t info;
  check_status(H5Gget_info(id(), &info), where(), "cannot list the group");
  std::vector<std::string> out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    check_status(n < 0 ? -1 : 0, where(), "cannot read a member name");
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(n));
    out.push_back(std::move(name));
  }
  return out;
}

void Group::remove(std::string_view path) {
  require_open();
  SB_CHECK(has(path), file_, ":", child_path(path), ": nothing to remove (no such object)");
  check_status(H5Ldelete(id(), std::string(path).c_str(), H5P_DEFAULT), file_ + ":" + child_path(path),
               "cannot remove the object");
}

Handle Group::open_object(std::string_view path, const char* kind) const {
  require_open();
  const std::string full = child_path(path);
  const H5I_type_t type = split_path(path).empty() ? H5I_BADID : object_type(id(), path);
  const H5I_type_t wanted = std::strcmp(kind, "group") == 0 ? H5I_GROUP : H5I_DATASET;
  SB_CHECK(type != H5I_BADID, file_, ":", full, ": no such ", kind);
  SB_CHECK(type == wanted, file_, ":", full, ": is a ", type_word(type), ", expected a ", kind);
  return Handle(check_id(H5Oopen(id(), std::string(path).c_str(), H5P_DEFAULT), file_ + ":" + full,
                         std::string("cannot open the ") + kind));
}

Group Group::group(std::string_view path) const {
  if (split_path(path).empty() && !path.empty()) {  // "/" itself
    require_open();
    return Group(Handle(check_id(H5Oopen(id(), "/", H5P_DEFAULT), where(), "cannot open the root group")), file_, "/");
  }
  return Group(open_object(path, "group"), file_, child_path(path));
}

Group Group::create_group(std::string_view path) {
  require_open();
  const std::string full = child_path(path);
  SB_CHECK(!split_path(path).empty(), where(), ": empty group name");
  SB_CHECK(!has(path), file_, ":", full, ": already exists");
  Handle lcpl = plist(H5P_LINK_CREATE);
  Handle gcpl = plist(H5P_GROUP_CREATE);
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  H5Pset_obj_track_times(gcpl.id(), 0);
  detail::compact_links(gcpl.id(), file_ + ":" + full);
  Handle g(check_id(H5Gcreate2(id(), std::string(path).c_str(), lcpl.id(), gcpl.id(), H5P_DEFAULT), file_ + ":" + full,
                    "cannot create the group"));
  return Group(std::move(g), file_, full);
}

Group Group::require_group(std::string_view path) { return is_group(path) ? group(path) : create_group(path); }

Dataset Group::dataset(std::string_view path) const {
  return Dataset(open_object(path, "dataset"), file_, child_path(path));
}

Dataset Group::create_dataset(std::string_view path, DType dtype, const Dims& shape) {
  return make_dataset(path, dtype, shape, false);
}

Dataset Group::reserve_dataset(std::string_view path, DType dtype, const Dims& shape) {
  return make_dataset(path, dtype, shape, true);
}

Dataset Group::make_dataset(std::string_view path, DType dtype, const Dims& shape, bool reserved) {
  require_open();
  const std::string full = child_path(path);
  SB_CHECK(!split_path(path).empty(), where(), ": empty dataset name");
  SB_CHECK(!shape.empty() && shape.size() <= 8, file_, ":", full, ": rank ", shape.size(),
           " unsupported (1 to 8 dimensions)");
  SB_CHECK(!has(path), file_, ":", full, ": already exists");
  const detail::HDims extent = detail::hdims(shape);
  Handle space(check_id(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr), file_ + ":" + full,
                        "cannot make a dataspace of shape " + dims_string(shape)));
  Handle lcpl = plist(H5P_LINK_CREATE);
  Handle dcpl = plist(H5P_DATASET_CREATE);
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  H5Pset_obj_track_times(dcpl.id(), 0);
  if (reserved) {
    check_status(H5Pset_layout(dcpl.id(), H5D_CONTIGUOUS), file_ + ":" + full, "cannot ask for contiguous storage");
    check_status(H5Pset_alloc_time(dcpl.id(), H5D_ALLOC_TIME_EARLY), file_ + ":" + full, "cannot allocate early");
    check_status(H5Pset_fill_time(dcpl.id(), H5D_FILL_TIME_NEVER), file_ + ":" + full, "cannot turn filling off");
  }
  Handle d(check_id(H5Dcreate2(id(), std::string(path).c_str(), detail::file_type(dtype), space.id(), lcpl.id(),
                               dcpl.id(), H5P_DEFAULT),
                    file_ + ":" + full, "cannot create the dataset"));
  return Dataset(std::move(d), file_, full);
}

Dataset Group::create_extendible(std::string_view path, DType dtype, uint64_t cols, uint64_t chunk_rows) {
  require_open();
  const std::string full = child_path(path);
  SB_CHECK(!split_path(path).empty(), where(), ": empty dataset name");
  SB_CHECK(!has(path), file_, ":", full, ": already exists");
  const uint64_t row_bytes = dtype_bytes(dtype) * (cols == 0 ? 1 : cols);
  if (chunk_rows == 0) chunk_rows = std::max<uint64_t>(1, (uint64_t{64} << 10) / row_bytes);
  SB_CHECK(chunk_rows * row_bytes <= (uint64_t{1} << 30), file_, ":", full, ": chunk of ", chunk_rows, " rows of ",
           row_bytes, " bytes exceeds 1 GiB; choose fewer chunk rows");
  using detail::HDims;
  const HDims dims = cols == 0 ? HDims{0} : HDims{0, cols};
  const HDims max_dims = cols == 0 ? HDims{H5S_UNLIMITED} : HDims{H5S_UNLIMITED, cols};
  const HDims chunk = cols == 0 ? HDims{chunk_rows} : HDims{chunk_rows, cols};
  Handle space(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims.data()),
                        file_ + ":" + full, "cannot make an extendible dataspace"));
  Handle lcpl = plist(H5P_LINK_CREATE);
  Handle dcpl = plist(H5P_DATASET_CREATE);
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  H5Pset_obj_track_times(dcpl.id(), 0);
  check_status(H5Pset_chunk(dcpl.id(), static_cast<int>(chunk.size()), chunk.data()), file_ + ":" + full,
               "cannot set the chunk shape " + dims_string(Dims(chunk.begin(), chunk.end())));
  Handle d(check_id(H5Dcreate2(id(), std::string(path).c_str(), detail::file_type(dtype), space.id(), lcpl.id(),
                               dcpl.id(), H5P_DEFAULT),
                    file_ + ":" + full, "cannot create the extendible dataset"));
  return Dataset(std::move(d), file_, full);
}

// ---- File ------------------------------------------------------------------------------------

File::~File() {
  handle_.reset();
  file_handle_.reset();
}

File File::create(const std::string& path, Create how) {
  detail::init_library();
  std::error_code ec;
  SB_CHECK(how == Create::truncate || !std::filesystem::exists(path, ec), "HDF5 file '", path,
           "' already exists; remove it or choose another path");
  File f;
  f.file_ = path;
  f.path_ = "/";
  Handle fcpl = plist(H5P_FILE_CREATE);
  detail::compact_links(fcpl.id(), path);
  Handle fapl = plist(H5P_FILE_ACCESS);
  detail::pin_format_versions(fapl.id(), path);
  f.file_handle_ = Handle(
      check_id(H5Fcreate(path.c_str(), how == Create::truncate ? H5F_ACC_TRUNC : H5F_ACC_EXCL, fcpl.id(), fapl.id()),
               path, "cannot create the HDF5 file (check the directory exists and is writable)"));
  f.handle_ = Handle(check_id(H5Gopen2(f.file_handle_.id(), "/", H5P_DEFAULT), path, "cannot open the root group"));
  return f;
}

File File::open(const std::string& path, Mode mode) {
  detail::init_library();
  std::error_code ec;
  SB_CHECK(std::filesystem::exists(path, ec), "HDF5 file '", path, "' does not exist");
  SB_CHECK(std::filesystem::is_regular_file(path, ec), "HDF5 file '", path, "' is not a regular file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) fail(path, "cannot read the file (check its permissions)");
  SB_CHECK(is_hdf5 > 0, "'", path, "' is not an HDF5 file (no HDF5 signature)");
  File f;
  f.file_ = path;
  f.path_ = "/";
  Handle fapl = plist(H5P_FILE_ACCESS);
  detail::pin_format_versions(fapl.id(), path);  // what an append adds keeps the walk's versions
  f.file_handle_ =
      Handle(check_id(H5Fopen(path.c_str(), mode == Mode::read_only ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl.id()), path,
                      "cannot open the HDF5 file (damaged, or locked by a process writing it)"));
  f.handle_ = Handle(
      check_id(H5Gopen2(f.file_handle_.id(), "/", H5P_DEFAULT), path, "cannot open the root group (damaged file)"));
  return f;
}

void File::flush() {
  require_open();
  check_status(H5Fflush(file_handle_.id(), H5F_SCOPE_GLOBAL), file_, "cannot flush the file");
}

void File::sync() {
  flush();
  void* vfd = nullptr;
  check_status(H5Fget_vfd_handle(file_handle_.id(), H5P_DEFAULT, &vfd), file_, "cannot get the file descriptor");
  const int fd = *static_cast<int*>(vfd);
  SB_CHECK(::fsync(fd) == 0, file_, ": fsync failed: ", std::strerror(errno));
}

void File::close() {
  require_open();
  const ssize_t open_objects = H5Fget_obj_count(
      file_handle_.id(), H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_DATATYPE | H5F_OBJ_ATTR | H5F_OBJ_LOCAL);
  check_status(open_objects < 0 ? -1 : 0, file_, "cannot count the open objects");
  SB_CHECK(open_objects <= 1, file_, ": cannot close: ", open_objects - 1,
           " groups, datasets or attributes of this file are still open; destroy them first");
  handle_.reset();
  const hid_t id = file_handle_.release();
  check_status(H5Fclose(id), file_, "closing the file failed; its content may be incomplete");
}

bool is_hdf5_file(const std::string& path) {
  detail::init_library();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const htri_t result = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return result > 0;
}

}  // namespace sb::h5
