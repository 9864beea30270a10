// h5.hpp: attributes of groups and datasets — UTF-8 strings (written fixed-length, so that no
// global heap is involved; variable-length ones, as h5py and earlier samebits files hold them, are
// read too), int64/uint64/double scalars and small 1-D arrays. Reads check the stored type, shape
// and storage size before HDF5 decodes the value; nothing is converted except byte order.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "h5_detail.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

using detail::check_id;
using detail::check_status;

namespace {

// Small: kept in the object header. Larger arrays belong in datasets.
constexpr std::size_t kMaxAttrBytes = 60000;

std::string attr_where(const Object& o, std::string_view name) {
  return o.where() + " attribute '" + std::string(name) + "'";
}

herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

// Opens an existing attribute, or fails naming it.
Handle open_attr(const Object& o, std::string_view name) {
  SB_CHECK(o.has_attr(name), attr_where(o, name), ": no such attribute");
  return Handle(check_id(H5Aopen(o.id(), std::string(name).c_str(), H5P_DEFAULT), attr_where(o, name),
                         "cannot open the attribute"));
}

}  // namespace

bool Object::has_attr(std::string_view name) const {
  require_open();
  const htri_t exists = H5Aexists(id(), std::string(name).c_str());
  check_status(exists < 0 ? -1 : 0, attr_where(*this, name), "cannot look up the attribute");
  return exists > 0;
}

std::vector<std::string> Object::attr_names() const {
  require_open();
  std::vector<std::string> names;
  hsize_t index = 0;
  check_status(H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_name, &names), where(),
               "cannot list the attributes");
  return names;
}

void Object::remove_attr(std::string_view name) {
  SB_CHECK(has_attr(name), attr_where(*this, name), ": no such attribute to remove");
  check_status(H5Adelete(id(), std::string(name).c_str()), attr_where(*this, name), "cannot remove the attribute");
}

void Object::set_attr(std::string_view name, std::string_view value) {
  require_open();
  const std::string where = attr_where(*this, name);
  SB_CHECK(value.find('\0') == std::string_view::npos, where, ": a string attribute cannot hold a NUL character");
  SB_CHECK(value.size() <= kMaxAttrBytes, where, ": a string of ", value.size(),
           " bytes is too long for an attribute (", kMaxAttrBytes, " at most); store it in a dataset");
  if (has_attr(name)) remove_attr(name);
  // Fixed length, NUL-padded (an empty string is one NUL: HDF5 has no zero-size string type).
  std::string padded(value);
  padded.resize(std::max<std::size_t>(1, padded.size()), '\0');
  Handle type(check_id(H5Tcopy(H5T_C_S1), where, "cannot make a string type"));
  check_status(H5Tset_size(type.id(), padded.size()), where, "cannot make a string type");
  check_status(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), where, "cannot make a string type");
  check_status(H5Tset_cset(type.id(), H5T_CSET_UTF8), where, "cannot make a string type");
  Handle space(check_id(H5Screate(H5S_SCALAR), where, "cannot make a scalar dataspace"));
  Handle attr(check_id(H5Acreate2(id(), std::string(name).c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                       where, "cannot create the attribute"));
  check_status(H5Awrite(attr.id(), type.id(), padded.data()), where, "cannot write the attribute");
}

void Object::write_attr(std::string_view name, DType dtype, const void* data, std::size_t count, bool scalar) {
  require_open();
  const std::string where = attr_where(*this, name);
  SB_CHECK(count * dtype_bytes(dtype) <= kMaxAttrBytes, where, ": ", count, " values are too many for an attribute (",
           kMaxAttrBytes / dtype_bytes(dtype), " at most); store them in a dataset");
  if (has_attr(name)) remove_attr(name);
  const hsize_t n = count;
  Handle space(
      check_id(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), where, "cannot make the dataspace"));
  Handle attr(check_id(
      H5Acreate2(id(), std::string(name).c_str(), detail::file_type(dtype), space.id(), H5P_DEFAULT, H5P_DEFAULT),
      where, "cannot create the attribute"));
  if (count > 0) {
    check_status(H5Awrite(attr.id(), detail::memory_type(dtype), data), where, "cannot write the attribute");
  }
}

std::vector<std::byte> Object::read_attr(std::string_view name, DType dtype, bool scalar) const {
  require_open();
  const std::string where = attr_where(*this, name);
  Handle attr = open_attr(*this, name);
  Handle type(check_id(H5Aget_type(attr.id()), where, "cannot read the attribute type"));
  DType stored;
  SB_CHECK(detail::classify(type.id(), stored) && stored == dtype, where, ": holds ", detail::describe_type(type.id()),
           ", expected ", dtype_name(dtype));
  Handle space(check_id(H5Aget_space(attr.id()), where, "cannot read the attribute shape"));
  const H5S_class_t kind = H5Sget_simple_extent_type(space.id());
  const int rank = H5Sget_simple_extent_ndims(space.id());
  if (scalar) {
    SB_CHECK(kind == H5S_SCALAR, where, ": is an array, expected a single value");
  } else {
    SB_CHECK(kind == H5S_NULL || (kind == H5S_SIMPLE && rank == 1), where, ": has rank ", rank,
             ", expected a 1-D array");
  }
  const hssize_t points = kind == H5S_NULL ? 0 : H5Sget_simple_extent_npoints(space.id());
  check_status(points < 0 ? -1 : 0, where, "cannot count the values");
  SB_CHECK(static_cast<std::size_t>(points) <= kMaxAttrBytes / dtype_bytes(dtype), where, ": ", points,
           " values is more than an attribute holds (damaged file)");
  const std::size_t bytes = static_cast<std::size_t>(points) * dtype_bytes(dtype);
  SB_CHECK(H5Aget_storage_size(attr.id()) == bytes, where, ": ", points, " values of ", dtype_name(dtype),
           " stored in ", H5Aget_storage_size(attr.id()), " bytes (damaged file)");
  std::vector<std::byte> out(bytes);
  if (points > 0) {
    check_status(H5Aread(attr.id(), detail::memory_type(dtype), out.data()), where, "cannot read the attribute");
  }
  return out;
}

template <class T>
std::vector<T> Object::read_attr_array(std::string_view name) const {
  const std::vector<std::byte> bytes = read_attr(name, dtype_of<T>(), false);
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

namespace {
template <class T>
T scalar_from(const std::vector<std::byte>& bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}
}  // namespace

int64_t Object::attr_int(std::string_view name) const {
  return scalar_from<int64_t>(read_attr(name, DType::i64, true));
}
uint64_t Object::attr_uint(std::string_view name) const {
  return scalar_from<uint64_t>(read_attr(name, DType::u64, true));
}
double Object::attr_double(std::string_view name) const {
  return scalar_from<double>(read_attr(name, DType::f64, true));
}
std::vector<int64_t> Object::attr_ints(std::string_view name) const { return read_attr_array<int64_t>(name); }
std::vector<uint64_t> Object::attr_uints(std::string_view name) const { return read_attr_array<uint64_t>(name); }
std::vector<double> Object::attr_doubles(std::string_view name) const { return read_attr_array<double>(name); }

std::string Object::attr_string(std::string_view name) const {
  require_open();
  const std::string where = attr_where(*this, name);
  Handle attr = open_attr(*this, name);
  Handle type(check_id(H5Aget_type(attr.id()), where, "cannot read the attribute type"));
  SB_CHECK(H5Tget_class(type.id()) == H5T_STRING, where, ": holds ", detail::describe_type(type.id()),
           ", expected a string");
  Handle space(check_id(H5Aget_space(attr.id()), where, "cannot read the attribute shape"));
  SB_CHECK(H5Sget_simple_extent_type(space.id()) == H5S_SCALAR, where, ": is an array of strings, expected one string");
  const H5T_cset_t cset = H5Tget_cset(type.id());
  SB_CHECK(cset == H5T_CSET_ASCII || cset == H5T_CSET_UTF8, where,
           ": a string of an unknown character set (damaged file)");
  const htri_t variable = H5Tis_variable_str(type.id());
  check_status(variable < 0 ? -1 : 0, where, "cannot read the string type");
  if (variable > 0) {
    Handle memory(check_id(H5Tcopy(H5T_C_S1), where, "cannot make a string type"));
    check_status(H5Tset_size(memory.id(), H5T_VARIABLE), where, "cannot make a string type");
    check_status(H5Tset_cset(memory.id(), cset), where, "cannot make a string type");
    char* text = nullptr;
    check_status(H5Aread(attr.id(), memory.id(), &text), where, "cannot read the attribute");
    std::string out = text != nullptr ? text : "";
    H5free_memory(text);
    return out;
  }
  const std::size_t size = H5Tget_size(type.id());
  SB_CHECK(size > 0 && size <= kMaxAttrBytes && H5Aget_storage_size(attr.id()) == size, where,
           ": fixed-length string of ", size, " bytes stored in ", H5Aget_storage_size(attr.id()),
           " bytes (damaged file)");
  std::string out(size, '\0');
  check_status(H5Aread(attr.id(), type.id(), out.data()), where, "cannot read the attribute");
  if (H5Tget_strpad(type.id()) == H5T_STR_SPACEPAD) {
    out.erase(out.find_last_not_of(' ') + 1);
  } else {
    out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

}  // namespace sb::h5
