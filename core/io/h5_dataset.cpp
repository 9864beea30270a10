// h5.hpp: Dataset queries, whole and row-range reads and writes, resize and truncate. Reads check
// the stored dtype, the requested range and the storage (layout, filters, external files, the
// contiguous block or every chunk read: inside the file and of the size the extents imply) before
// HDF5 decodes a byte of data.
#include <limits>

#include "h5_detail.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

using detail::check_id;
using detail::check_status;

namespace {

// The dataset's extents (dims) and maximum extents (max_dims).
void extents(const Object& d, Dims& dims, Dims* max_dims) {
  Handle space(check_id(H5Dget_space(d.id()), d.where(), "cannot read the dataspace"));
  const int rank = H5Sget_simple_extent_ndims(space.id());
  check_status(rank, d.where(), "cannot read the rank");
  SB_CHECK(rank >= 1, d.where(), ": is a scalar or empty dataset, expected rank 1 or more");
  detail::HDims current(static_cast<std::size_t>(rank), 0);
  detail::HDims max(static_cast<std::size_t>(rank), 0);
  check_status(H5Sget_simple_extent_dims(space.id(), current.data(), max.data()), d.where(), "cannot read the shape");
  dims.assign(current.begin(), current.end());
  if (max_dims != nullptr) max_dims->assign(max.begin(), max.end());
}

// The product of extents, or an error when it overflows (a damaged header).
uint64_t product(const Dims& dims, std::size_t from, const std::string& where) {
  uint64_t n = 1;
  for (std::size_t i = from; i < dims.size(); ++i) {
    SB_CHECK(dims[i] == 0 || n <= std::numeric_limits<uint64_t>::max() / dims[i], where, ": shape ", dims_string(dims),
             " overflows 64 bits (damaged file?)");
    n *= dims[i];
  }
  return n;
}

}  // namespace

DType Dataset::dtype() const {
  require_open();
  Handle type(check_id(H5Dget_type(id()), where(), "cannot read the datatype"));
  DType out;
  SB_CHECK(detail::classify(type.id(), out), where(), ": holds ", detail::describe_type(type.id()),
           "; samebits reads f32, f64, i32, i64, u64 and u8 datasets");
  return out;
}

Dims Dataset::shape() const {
  require_open();
  Dims dims;
  extents(*this, dims, nullptr);
  return dims;
}

uint64_t Dataset::rows() const { return shape()[0]; }

uint64_t Dataset::row_size() const { return product(shape(), 1, where()); }

bool Dataset::extendible() const {
  require_open();
  Dims dims, max_dims;
  extents(*this, dims, &max_dims);
  return max_dims[0] == H5S_UNLIMITED;
}

uint64_t Dataset::file_offset() const {
  require_open();
  const haddr_t addr = H5Dget_offset(id());
  H5Eclear2(H5E_DEFAULT);  // H5Dget_offset of unallocated or chunked storage records an error
  SB_CHECK(addr != HADDR_UNDEF, where(), ": has no contiguous storage allocated in the file");
  return addr;
}

void Dataset::check(DType expected_dtype, const Dims& expected_shape) const {
  const DType actual_dtype = dtype();
  const Dims actual_shape = shape();
  bool ok = actual_dtype == expected_dtype && actual_shape.size() == expected_shape.size();
  for (std::size_t i = 0; ok && i < actual_shape.size(); ++i) {
    ok = expected_shape[i] == kAny || expected_shape[i] == actual_shape[i];
  }
  SB_CHECK(ok, where(), ": holds ", dtype_name(actual_dtype), " ", dims_string(actual_shape), ", expected ",
           dtype_name(expected_dtype), " ", dims_string(expected_shape));
}

uint64_t Dataset::rows_in(std::size_t elements) const {
  const uint64_t per_row = row_size();
  SB_CHECK(per_row > 0 && elements % per_row == 0, where(), ": ", elements, " values are not whole rows of ", per_row,
           " (shape ", dims_string(shape()), ")");
  return elements / per_row;
}

std::size_t Dataset::checked_elements(DType wanted, uint64_t first, uint64_t count) const {
  const DType stored = dtype();
  SB_CHECK(stored == wanted, where(), ": holds ", dtype_name(stored), " values, read as ", dtype_name(wanted));
  const Dims dims = shape();
  SB_CHECK(first <= dims[0] && count <= dims[0] - first, where(), ": rows [", first, ", ", first, "+", count,
           ") are outside the ", dims[0], " rows of shape ", dims_string(dims));
  const uint64_t per_row = product(dims, 1, where());
  SB_CHECK(per_row == 0 || count <= std::numeric_limits<std::size_t>::max() / per_row / dtype_bytes(wanted), where(),
           ": reading ", count, " rows of ", per_row, " values does not fit in memory");
  return static_cast<std::size_t>(count * per_row);
}

namespace {

// A hyperslab of rows [first, first + count), count > 0, of a dataset of extents `dims` (file side) and the
// matching contiguous memory space.
struct RowSelection {
  Handle file_space;
  Handle memory_space;
};

RowSelection select_rows(const Dataset& d, const Dims& dims, uint64_t first, uint64_t count) {
  RowSelection s;
  s.file_space = Handle(check_id(H5Dget_space(d.id()), d.where(), "cannot read the dataspace"));
  detail::HDims start(dims.size(), 0);
  detail::HDims extent = detail::hdims(dims);
  start[0] = first;
  extent[0] = count;
  check_status(H5Sselect_hyperslab(s.file_space.id(), H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr),
               d.where(), "cannot select rows");
  const hsize_t elements = product(Dims(extent.begin(), extent.end()), 0, d.where());
  s.memory_space = Handle(check_id(H5Screate_simple(1, &elements, nullptr), d.where(), "cannot make a memory space"));
  return s;
}

}  // namespace

void Dataset::write_raw(DType dtype, const void* data, std::size_t elements) {
  const Dims dims = shape();
  SB_CHECK(elements == product(dims, 0, where()), where(), ": writing ", elements, " values into shape ",
           dims_string(dims), " (", product(dims, 0, where()), " values)");
  write_rows_raw(dtype, data, elements, 0);
}

void Dataset::write_rows_raw(DType dtype, const void* data, std::size_t elements, uint64_t first) {
  require_open();
  const DType stored = this->dtype();
  SB_CHECK(stored == dtype, where(), ": holds ", dtype_name(stored), " values, written as ", dtype_name(dtype));
  const Dims dims = shape();
  const uint64_t count = rows_in(elements);
  SB_CHECK(first <= dims[0] && count <= dims[0] - first, where(), ": rows [", first, ", ", first + count,
           ") are outside the ", dims[0], " rows of shape ", dims_string(dims),
           dims[0] < first + count && extendible() ? "; resize() or append_rows() first" : "");
  if (count == 0 || product(dims, 1, where()) == 0) return;
  const RowSelection s = select_rows(*this, dims, first, count);
  check_status(H5Dwrite(id(), detail::memory_type(dtype), s.memory_space.id(), s.file_space.id(), H5P_DEFAULT, data),
               where(), "writing rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") failed");
}

namespace {

uint64_t file_size_of(const Object& d) {
  Handle file(check_id(H5Iget_file_id(d.id()), d.where(), "cannot find the dataset's file"));
  hsize_t size = 0;
  check_status(H5Fget_filesize(file.id(), &size), d.where(), "cannot read the file size");
  return size;
}

const char* layout_name(H5D_layout_t layout) {
  switch (layout) {
    case H5D_COMPACT: return "compact";
    case H5D_CONTIGUOUS: return "contiguous";
    case H5D_CHUNKED: return "chunked";
    case H5D_VIRTUAL: return "virtual";
    default: return "unknown";
  }
}

// True when [addr, addr + size) lies inside a file of `eof` bytes.
bool inside(haddr_t addr, hsize_t size, uint64_t eof) { return addr <= eof && size <= eof - addr; }

}  // namespace

void Dataset::check_storage(DType dtype, const Dims& dims, uint64_t first, uint64_t count) const {
  Handle dcpl(check_id(H5Dget_create_plist(id()), where(), "cannot read the creation properties"));
  const H5D_layout_t layout = H5Pget_layout(dcpl.id());
  SB_CHECK(layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED, where(), ": storage layout ", layout_name(layout),
           "; samebits reads contiguous and chunked datasets (damaged file?)");
  SB_CHECK(H5Pget_nfilters(dcpl.id()) == 0, where(),
           ": has a filter pipeline (compression?); samebits writes and reads unfiltered data");
  SB_CHECK(H5Pget_external_count(dcpl.id()) == 0, where(),
           ": keeps its data in external files; samebits reads data inside the file only");
  const uint64_t eof = file_size_of(*this);
  const uint64_t element = dtype_bytes(dtype);
  const uint64_t elements = product(dims, 0, where());
  SB_CHECK(elements <= eof / element, where(), ": shape ", dims_string(dims), " of ", dtype_name(dtype),
           " needs more bytes than the file's ", eof, " (damaged file)");
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t addr = H5Dget_offset(id());
    const hsize_t stored = H5Dget_storage_size(id());
    H5Eclear2(H5E_DEFAULT);  // H5Dget_offset of unallocated storage records an error
    SB_CHECK(addr == HADDR_UNDEF ? stored == 0 : stored == elements * element && inside(addr, stored, eof), where(),
             ": its ", elements * element, " bytes are stored as ", stored, " bytes at ", addr, " in a file of ", eof,
             " bytes (damaged file)");
    return;
  }
  const int rank = static_cast<int>(dims.size());
  detail::HDims chunk(dims.size(), 0);
  SB_CHECK(H5Pget_chunk(dcpl.id(), rank, chunk.data()) == rank, where(), ": its chunks are not of rank ", rank,
           " (damaged file)");
  uint64_t chunk_bytes = element;
  for (const hsize_t c : chunk) {
    SB_CHECK(c >= 1 && chunk_bytes <= (uint64_t{1} << 30) / c, where(), ": chunk shape ",
             dims_string(Dims(chunk.begin(), chunk.end())), " is empty or over 1 GiB (damaged file)");
    chunk_bytes *= c;
  }
  // Every chunk holding rows [first, first + count): unfiltered, of the chunk's size, in the file.
  detail::HDims at(dims.size(), 0);
  at[0] = first / chunk[0] * chunk[0];
  for (bool done = false; !done;) {
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    check_status(H5Dget_chunk_info_by_coord(id(), at.data(), &mask, &addr, &size), where(),
                 "cannot look up the chunk at row " + std::to_string(at[0]));
    SB_CHECK(addr == HADDR_UNDEF || (mask == 0 && size == chunk_bytes && inside(addr, size, eof)), where(),
             ": the chunk at row ", at[0], " is stored as ", size, " bytes at ", addr, " (filter mask ", mask,
             "), expected ", chunk_bytes, " unfiltered bytes inside the file's ", eof, " (damaged file)");
    for (int k = rank - 1; k >= 0; --k) {
      at[k] += chunk[k];
      if (at[k] < (k == 0 ? first + count : dims[k])) break;
      if (k == 0) done = true;
      at[k] = 0;
    }
  }
}

void Dataset::read_whole_raw(DType dtype, void* out, std::size_t elements) const {
  const std::size_t stored = checked_elements(dtype, 0, rows());
  SB_CHECK(stored == elements, where(), ": holds ", stored, " values, the schema expects ", elements);
  read_rows_raw(dtype, out, 0, rows());
}

void Dataset::read_rows_raw(DType dtype, void* out, uint64_t first, uint64_t count) const {
  const Dims dims = shape();
  if (count == 0 || product(dims, 1, where()) == 0) return;
  check_storage(dtype, dims, first, count);
  const RowSelection s = select_rows(*this, dims, first, count);
  check_status(H5Dread(id(), detail::memory_type(dtype), s.memory_space.id(), s.file_space.id(), H5P_DEFAULT, out),
               where(), "reading rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") failed");
}

void Dataset::resize(uint64_t new_rows) {
  require_open();
  Dims dims, max_dims;
  extents(*this, dims, &max_dims);
  SB_CHECK(max_dims[0] == H5S_UNLIMITED, where(), ": has a fixed shape ", dims_string(dims),
           "; only datasets made by create_extendible can be resized");
  dims[0] = new_rows;
  const detail::HDims extent = detail::hdims(dims);
  check_status(H5Dset_extent(id(), extent.data()), where(), "cannot resize to " + dims_string(dims));
}

void Dataset::truncate(uint64_t new_rows) {
  const uint64_t current = rows();
  SB_CHECK(new_rows <= current, where(), ": cannot truncate to ", new_rows, " rows, it has only ", current);
  resize(new_rows);
}

}  // namespace sb::h5
