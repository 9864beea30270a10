// h5::check_structure (h5_structure.hpp): files samebits writes pass the walk — also with more
// links in a group than HDF5 keeps compact by default — and so do files of the older layout (old-
// style groups, variable-length strings); each kind of damage HDF5 1.10 would trust is refused with
// one error naming the file and the structure: a local heap of 2^55 bytes, a global-heap object
// longer than its string, a B-tree node that points to itself, dense link storage.
#include <doctest/doctest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/h5_structure.hpp"
#include "samebits/det/error.hpp"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sb_test_h5_structure_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string walk_error(const std::string& path) {
  try {
    sb::h5::check_structure(path, fs::file_size(path));
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// The offset of the first `magic` in `bytes` (REQUIREd to be there).
std::size_t find(const std::vector<char>& bytes, const char* magic) {
  const std::string_view all(bytes.data(), bytes.size());
  const std::size_t at = all.find(magic);
  REQUIRE(at != std::string_view::npos);
  return at;
}

void put_u64(std::vector<char>& bytes, std::size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) bytes[at + std::size_t(k)] = char(v >> (8 * k));
}

// What samebits writes: a chunked series, a contiguous array, string and number attributes.
void samebits_file(const std::string& path) {
  sb::h5::File f = sb::h5::File::create(path, sb::h5::Create::truncate);
  f.set_attr("format", "samebits-test");
  f.set_attr("steps", int64_t{20});
  f.create_extendible("series/loss", sb::h5::DType::f32, 0, 4).append_rows<float>(std::vector<float>(10, 1.5f));
  f.create_group("params").write_dataset<float>("w", std::vector<float>(12, 0.25f), {3, 4});
  f.close();
}

// An older file: an old-style group (symbol table) and a variable-length string attribute.
void older_file(const std::string& path) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t group = H5Gcreate2(file, "tensors", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t n = 4;
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  for (const char* name : {"offset", "numel", "rank", "shape"}) {
    const hid_t d = H5Dcreate2(group, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
  }
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(group, "names", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = "wte\nwpe";
  H5Awrite(a, type, &text);
  H5Aclose(a), H5Sclose(scalar), H5Tclose(type), H5Sclose(space), H5Gclose(group);
  REQUIRE(H5Fclose(file) >= 0);
}

}  // namespace

TEST_CASE("files samebits writes and files of the older layout pass the walk") {
  TempDir t;
  samebits_file(t.file("new.h5"));
  CHECK(walk_error(t.file("new.h5")) == "");
  older_file(t.file("old.h5"));
  CHECK(walk_error(t.file("old.h5")) == "");
  // More external links in one group than HDF5's default compact limit (8): still compact.
  {
    sb::h5::File f = sb::h5::File::create(t.file("links.h5"), sb::h5::Create::truncate);
    for (int k = 0; k < 40; ++k) f.link_external("snapshots/step_" + std::to_string(k), "store.h5", "/params");
    f.link_external("checkpoint", "store.h5", "/");
    f.close();
  }
  CHECK(walk_error(t.file("links.h5")) == "");
  const sb::h5::File f = sb::h5::File::open(t.file("links.h5"));
  CHECK(f.group("snapshots").names().size() == 40);
  CHECK(f.group("snapshots").is_external_link("step_39", "store.h5", "/params"));
}

// The format versions the walk reads are pinned on every file samebits creates or opens, so a
// build against a newer HDF5 (1.12, 1.14, 2.x) writes the same structures (EARLIEST .. V18).
TEST_CASE("files are created and opened with the format versions the walk is written for") {
  TempDir t;
  const auto bounds = [](const sb::h5::File& f) {
    const hid_t file = H5Iget_file_id(f.id());
    const hid_t fapl = H5Fget_access_plist(file);
    H5F_libver_t low{}, high{};
    REQUIRE(H5Pget_libver_bounds(fapl, &low, &high) >= 0);
    H5Pclose(fapl);
    H5Fclose(file);
    return std::pair{low, high};
  };
  const auto pinned = std::pair{H5F_LIBVER_EARLIEST, H5F_LIBVER_V18};
  sb::h5::File made = sb::h5::File::create(t.file("pinned.h5"), sb::h5::Create::truncate);
  CHECK(bounds(made) == pinned);
  made.close();
  CHECK(bounds(sb::h5::File::open(t.file("pinned.h5"), sb::h5::Mode::read_write)) == pinned);
  CHECK(bounds(sb::h5::File::create_in_memory("memory.h5")) == pinned);
}

TEST_CASE("a local heap whose size points far past the file is refused before HDF5 allocates it") {
  TempDir t;
  older_file(t.file("old.h5"));
  std::vector<char> b = bytes_of(t.file("old.h5"));
  put_u64(b, find(b, "HEAP") + 8, uint64_t{1} << 55);
  write_bytes(t.file("heap.h5"), b);
  const std::string e = walk_error(t.file("heap.h5"));
  CHECK(e.find(t.file("heap.h5") + ": its HDF5 structure is damaged") == 0);
  CHECK(e.find("a local heap of 36028797018963968 bytes") != std::string::npos);
}

TEST_CASE("a global-heap object longer than the string that names it is refused") {
  TempDir t;
  older_file(t.file("old.h5"));
  std::vector<char> b = bytes_of(t.file("old.h5"));
  const std::size_t object = find(b, "GCOL") + 16;  // the first object: index, refs, reserved, size
  put_u64(b, object + 8, 8);                        // "wte\nwpe" is 7 bytes; 8 keeps the objects' tiling (padded to 8)
  write_bytes(t.file("gcol.h5"), b);
  INFO(walk_error(t.file("gcol.h5")));
  CHECK(walk_error(t.file("gcol.h5")).find("global heap object 1 is missing or of another size") != std::string::npos);
}

TEST_CASE("a chunk index node that points to itself is refused (HDF5 would recurse without end)") {
  TempDir t;
  samebits_file(t.file("new.h5"));
  std::vector<char> b = bytes_of(t.file("new.h5"));
  const std::size_t node = find(b, "TREE\x01");
  b[node + 5] = 1;                             // level 1: its children are nodes
  put_u64(b, node + 24 + 24, uint64_t(node));  // child 0 (after key 0 of 8 + 8 * 2 bytes) = itself
  write_bytes(t.file("cycle.h5"), b);
  CHECK(walk_error(t.file("cycle.h5")).find("a B-tree node reached twice") != std::string::npos);
}

TEST_CASE("a group in HDF5's dense link storage is refused: samebits never writes one") {
  TempDir t;
  const hid_t file = H5Fcreate(t.file("dense.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t group = H5Gcreate2(file, "states", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  for (int k = 0; k < 12; ++k) {
    REQUIRE(H5Lcreate_external("store.h5", "/", group, ("step_" + std::to_string(k)).c_str(), H5P_DEFAULT,
                               H5P_DEFAULT) >= 0);
  }
  H5Gclose(group);
  REQUIRE(H5Fclose(file) >= 0);
  CHECK(walk_error(t.file("dense.h5")).find("dense link storage") != std::string::npos);
}
