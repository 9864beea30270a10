// A thin RAII layer over the HDF5 C API for run files and checkpoints (in the spirit of HighFive):
// File, Group, Dataset and attributes; every HDF5 failure becomes an sb::Error naming the file and
// the object path, with HDF5's own error stack. No HDF5 header leaks out (handles are int64_t).
// Contract: values are stored and read bit for bit (little-endian IEEE/two's-complement file types,
// no conversion other than byte order); reads check dtype and shape and never trust the file:
// before HDF5 decodes a value, its datatype (class, size, sign, byte order), rank, extents and
// storage (layout, no filters or external files, every chunk and the contiguous block inside the
// file and of the size the extents imply) are checked, and values land in buffers sized by the
// caller's schema. HDF5 may still fault on crafted metadata: walk an untrusted file's structure
// first (h5_structure.hpp) and parse it in a reader process (isolated_read.hpp).
// HDF5 (serial build) is not thread-safe: use these objects from one thread at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "samebits/core/dtype.hpp"
#include "samebits/det/error.hpp"

namespace sb::h5 {

// Datasets and attributes hold f32, f64, i32, i64, u64 and u8 (core/dtype.hpp).
using sb::DType;

template <class T>
constexpr bool kIsElement = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                            std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t> || std::is_same_v<T, uint8_t>;

template <class T>
constexpr DType dtype_of() {
  static_assert(kIsElement<T>, "h5 datasets hold float, double, int32_t, int64_t, uint64_t or uint8_t");
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::u64;
  else return DType::u8;
}

// f(T{}) for the C++ element type T of a stored dtype; throws sb::Error for bf16 and fp16,
// which no dataset holds.
template <class F>
decltype(auto) visit_element(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u64: return f(uint64_t{});
    case DType::u8: return f(uint8_t{});
    case DType::bf16:
    case DType::fp16: break;
  }
  SB_FAIL("h5: a dataset cannot hold dtype ", dtype_name(dtype));
}

// Extents, outermost first. In Dataset::check, kAny matches any extent.
using Dims = std::vector<uint64_t>;
constexpr uint64_t kAny = UINT64_MAX;
std::string dims_string(const Dims& dims);  // "(3, 4)"; kAny prints as "*"

// An owned HDF5 identifier (hid_t); closes it with the call its kind needs. Errors on close are
// ignored here: File::close() is the checked close.
class Handle {
 public:
  Handle() = default;
  explicit Handle(int64_t id) : id_(id) {}
  Handle(Handle&& other) noexcept : id_(other.release()) {}
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  int64_t id() const { return id_; }
  bool valid() const { return id_ >= 0; }
  int64_t release() {
    const int64_t id = id_;
    id_ = -1;
    return id;
  }
  void reset();

 private:
  int64_t id_ = -1;
};

class Dataset;
class Group;

// What groups and datasets share: a name for messages, and attributes. Attribute values are
// strings (UTF-8, written fixed-length: no global heap; variable-length ones, as h5py and earlier
// samebits files hold them, are read too), int64/uint64/double scalars and 1-D arrays of
// them; reading checks the stored type exactly (an int64 attribute does not read as double).
class Object {
 public:
  const std::string& file_name() const { return file_; }
  const std::string& path() const { return path_; }  // "/series/loss"
  int64_t id() const { return handle_.id(); }

  bool has_attr(std::string_view name) const;
  std::vector<std::string> attr_names() const;  // in name order
  void remove_attr(std::string_view name);

  // Creates or replaces the attribute.
  void set_attr(std::string_view name, std::string_view value);
  void set_attr(std::string_view name, const char* value) { set_attr(name, std::string_view(value)); }
  void set_attr(std::string_view name, const std::string& value) { set_attr(name, std::string_view(value)); }
  void set_attr(std::string_view name, int64_t value) { write_attr(name, DType::i64, &value, 1, true); }
  void set_attr(std::string_view name, uint64_t value) { write_attr(name, DType::u64, &value, 1, true); }
  void set_attr(std::string_view name, double value) { write_attr(name, DType::f64, &value, 1, true); }
  void set_attr(std::string_view name, std::span<const int64_t> v) {
    write_attr(name, DType::i64, v.data(), v.size(), false);
  }
  void set_attr(std::string_view name, std::span<const uint64_t> v) {
    write_attr(name, DType::u64, v.data(), v.size(), false);
  }
  void set_attr(std::string_view name, std::span<const double> v) {
    write_attr(name, DType::f64, v.data(), v.size(), false);
  }

  std::string attr_string(std::string_view name) const;  // fixed- or variable-length strings
  int64_t attr_int(std::string_view name) const;
  uint64_t attr_uint(std::string_view name) const;
  double attr_double(std::string_view name) const;
  std::vector<int64_t> attr_ints(std::string_view name) const;
  std::vector<uint64_t> attr_uints(std::string_view name) const;
  std::vector<double> attr_doubles(std::string_view name) const;

  // "file.h5:/series/loss" for messages.
  std::string where() const { return file_ + ":" + path_; }

 protected:
  Object() = default;
  Object(Handle handle, std::string file, std::string path)
      : handle_(std::move(handle)), file_(std::move(file)), path_(std::move(path)) {}
  void require_open() const;

  Handle handle_;
  std::string file_;
  std::string path_;

 private:
  void write_attr(std::string_view name, DType dtype, const void* data, std::size_t count, bool scalar);
  // The attribute's elements after checking its type is `dtype` (scalar: exactly one, rank 0).
  std::vector<std::byte> read_attr(std::string_view name, DType dtype, bool scalar) const;
  template <class T>
  std::vector<T> read_attr_array(std::string_view name) const;
};

// A dataset of rank ≥ 1. Fixed datasets are contiguous; extendible ones (Group::create_extendible)
// are chunked with an unlimited first dimension: one row per step for series.
class Dataset : public Object {
 public:
  Dataset() = default;

  DType dtype() const;  // throws for element types outside DType
  Dims shape() const;
  uint64_t rows() const;      // shape()[0]
  uint64_t row_size() const;  // elements per row: product of shape()[1..]
  bool extendible() const;    // first dimension unlimited
  // Where a contiguous dataset's bytes start in the file (Group::reserve_dataset).
  uint64_t file_offset() const;

  // Throws "file:path holds i32 (10), expected f64 (*)" unless dtype and shape match (kAny
  // extents match anything; the rank must match).
  void check(DType dtype, const Dims& shape) const;

  // The whole dataset: data.size() must equal the element count.
  template <class T>
  void write(std::span<const T> data) {
    write_raw(dtype_of<T>(), data.data(), data.size());
  }
  template <class T>
  std::vector<T> read() const {
    std::vector<T> out(checked_elements(dtype_of<T>(), 0, rows()));
    read_rows_raw(dtype_of<T>(), out.data(), 0, rows());
    return out;
  }

  // The whole dataset into `out`, a buffer sized by the caller's schema: out.size() must equal the
  // dataset's element count (check() its dtype and shape first).
  template <class T>
  void read_into(std::span<T> out) const {
    read_whole_raw(dtype_of<T>(), out.data(), out.size());
  }

  // Rows [first, first + data.size() / row_size()), which must lie inside the current shape.
  template <class T>
  void write_rows(uint64_t first, std::span<const T> data) {
    write_rows_raw(dtype_of<T>(), data.data(), data.size(), first);
  }
  template <class T>
  std::vector<T> read_rows(uint64_t first, uint64_t count) const {
    std::vector<T> out(checked_elements(dtype_of<T>(), first, count));
    read_rows_raw(dtype_of<T>(), out.data(), first, count);
    return out;
  }
  // Extends an extendible dataset by data.size() / row_size() rows and writes them.
  template <class T>
  void append_rows(std::span<const T> data) {
    const uint64_t first = rows();
    resize(first + rows_in(data.size()));
    write_rows(first, data);
  }

  // Extendible datasets only: grow (new rows read as zero) or shrink to `rows` rows.
  void resize(uint64_t rows);
  // resize() down to `rows` ≤ rows(): cutting a series back to a checkpoint's step on resume.
  void truncate(uint64_t rows);

 private:
  friend class Group;
  Dataset(Handle handle, std::string file, std::string path)
      : Object(std::move(handle), std::move(file), std::move(path)) {}
  uint64_t rows_in(std::size_t elements) const;
  std::size_t checked_elements(DType wanted, uint64_t first, uint64_t count) const;
  void write_raw(DType dtype, const void* data, std::size_t elements);
  void write_rows_raw(DType dtype, const void* data, std::size_t elements, uint64_t first);
  void read_rows_raw(DType dtype, void* out, uint64_t first, uint64_t count) const;
  void read_whole_raw(DType dtype, void* out, std::size_t elements) const;
  // Throws unless rows [first, first + count) are stored where and as the extents say (see top).
  void check_storage(DType dtype, const Dims& dims, uint64_t first, uint64_t count) const;
};

// A group: named children (groups and datasets) and attributes. Paths are relative to this group
// ("series/loss") or absolute ("/series/loss").
class Group : public Object {
 public:
  Group() = default;

  bool has(std::string_view path) const;  // any object at path (false if a parent is missing)
  bool is_group(std::string_view path) const;
  bool is_dataset(std::string_view path) const;
  std::vector<std::string> names() const;  // direct children, in name order
  void remove(std::string_view path);      // unlinks the object (HDF5 keeps the space)

  // Links by name, never traversed (h5_link.cpp): an external link `name` → target_object in
  // target_file (relative names resolve beside this file: h5py follows it); whether a link of any
  // kind exists at `name` (its parents must be hard links to groups); unlinking it.
  void link_external(std::string_view name, const std::string& target_file, const std::string& target_object);
  bool has_link(std::string_view name) const;
  void remove_link(std::string_view name);
  // True when `name` is an external link to exactly target_object in target_file.
  bool is_external_link(std::string_view name, const std::string& target_file, const std::string& target_object) const;

  Group create_group(std::string_view path);   // creates missing parents; error if it exists
  Group group(std::string_view path) const;    // error if missing or not a group
  Group require_group(std::string_view path);  // opens, or creates when missing

  // A fixed-size dataset of rank ≥ 1, zero-filled.
  Dataset create_dataset(std::string_view path, DType dtype, const Dims& shape);
  // A fixed-size contiguous dataset whose storage is allocated now and never written by HDF5: its
  // bytes are written at file_offset() by the caller, outside HDF5 (a store file's data, written in
  // one pass after the file is closed: store_data.hpp; until then it reads as whatever the disk held).
  Dataset reserve_dataset(std::string_view path, DType dtype, const Dims& shape);
  // An extendible, chunked dataset with 0 rows: 1-D when cols = 0, else (rows, cols). chunk_rows
  // = 0 chooses about 64 KiB per chunk.
  Dataset create_extendible(std::string_view path, DType dtype, uint64_t cols = 0, uint64_t chunk_rows = 0);
  Dataset dataset(std::string_view path) const;  // error if missing or not a dataset

  // create_dataset + write; shape defaults to (data.size()).
  template <class T>
  Dataset write_dataset(std::string_view path, std::span<const T> data, Dims shape = {}) {
    if (shape.empty()) shape = {static_cast<uint64_t>(data.size())};
    Dataset d = create_dataset(path, dtype_of<T>(), shape);
    d.write(data);
    return d;
  }

 protected:
  friend class File;
  Group(Handle handle, std::string file, std::string path)
      : Object(std::move(handle), std::move(file), std::move(path)) {}
  std::string child_path(std::string_view path) const;
  Handle open_object(std::string_view path, const char* kind) const;
  Dataset make_dataset(std::string_view path, DType dtype, const Dims& shape, bool reserved);
};

enum class Mode { read_only, read_write };
enum class Create { exclusive, truncate };

// An HDF5 file; as a Group it is the root group "/". The destructor closes quietly; close() is
// the checked close that guarantees the content reached the operating system.
class File : public Group {
 public:
  File() = default;
  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  ~File();

  // exclusive: error if `path` exists; truncate: replace it.
  static File create(const std::string& path, Create how = Create::exclusive);
  // Errors name the file: missing, not an HDF5 file, damaged, locked by a writer.
  static File open(const std::string& path, Mode mode = Mode::read_only);

  // In-memory files (HDF5's core driver, no backing store): HDF5 never writes to the disk, so a
  // full disk cannot fail inside HDF5 (whose clean-up after a failed write or close is unsafe in
  // 1.10); image() gives the bytes, which the caller writes with checked I/O. `name` is for
  // messages. open_in_memory reads the file at `path` (read-write in memory; the file on disk is
  // never changed).
  static File create_in_memory(const std::string& name);
  static File open_in_memory(const std::string& path);
  // The complete file as HDF5 would write it (flushes first).
  std::vector<std::byte> image();

  bool is_open() const { return file_handle_.valid(); }
  void flush();  // HDF5 buffers to the operating system
  void sync();   // flush() and fsync: on disk
  // Flushes and closes; throws if groups or datasets of this file are still open (close them
  // first) or if HDF5 reports an error.
  void close();

 private:
  Handle file_handle_;
};

// True if `path` is a readable HDF5 file (false for missing or other files).
bool is_hdf5_file(const std::string& path);

// Crash-safe replacement of a whole file: write(tmp) writes the complete new content to
// tmp = "<path>.tmp.<pid>"; then tmp is fsync'ed, renamed over `path` and the directory fsync'ed.
// If write throws (or any step fails), tmp is removed, `path` is left as it was, and the error
// propagates (as sb::Error naming the files for failures here).
void write_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& write);

// write_file_atomically for HDF5: fill() writes into a File created at the temporary path, which
// is then closed (checked) before the fsync and rename.
void write_h5_atomically(const std::string& path, const std::function<void(File&)>& fill);

// A list of names as one string attribute (the run file's and the checkpoint's "names"): joined
// with '\n', split at '\n'.
std::string join_lines(const std::vector<std::string>& lines);
std::vector<std::string> split_lines(const std::string& text);

}  // namespace sb::h5
