// The HDF5 layer: every dtype and shape round-trips bit for bit, series extend and truncate,
// attributes keep their types, every failure names the file and the object, atomic writes never
// damage the previous file, and h5py reads what we write (and we read what h5py writes).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"

namespace fs = std::filesystem;
using namespace sb::h5;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sb_test_h5_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

using sbt::error_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
std::vector<T> sample_values(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i * 37 % 101);
  if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    const T specials[] = {-T(0),         L::denorm_min(), -L::denorm_min(), L::max(), L::lowest(),
                          L::infinity(), -L::infinity(),  L::quiet_NaN(),   T(0.1),   T(1) / T(3)};
    for (std::size_t i = 0; i < std::size(specials) && i < n; ++i) v[i] = specials[i];
    if (n > std::size(specials)) {  // a NaN with a payload must survive too
      using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      const Bits bits = sizeof(T) == 4 ? Bits(0x7fc12345u) : Bits(0x7ff8000000abcdefull);
      std::memcpy(&v[std::size(specials)], &bits, sizeof(T));
    }
  } else {
    v[0] = std::numeric_limits<T>::min();
    if (n > 1) v[1] = std::numeric_limits<T>::max();
  }
  return v;
}

template <class T>
void round_trip(Group& g, const std::string& name) {
  const auto one = sample_values<T>(13);
  const auto two = sample_values<T>(12);
  g.write_dataset<T>(name + "_1d", one);
  g.write_dataset<T>(name + "_2d", two, {3, 4});
  g.write_dataset<T>(name + "_3d", two, {2, 3, 2});
  CHECK(same_bits(g.dataset(name + "_1d").read<T>(), one));
  const Dataset d2 = g.dataset(name + "_2d");
  CHECK(d2.dtype() == dtype_of<T>());
  CHECK(d2.shape() == Dims{3, 4});
  CHECK(d2.rows() == 3);
  CHECK(d2.row_size() == 4);
  CHECK_FALSE(d2.extendible());
  CHECK(same_bits(d2.read<T>(), two));
  CHECK(same_bits(d2.read_rows<T>(1, 2), std::vector<T>(two.begin() + 4, two.end())));
  CHECK(same_bits(g.dataset(name + "_3d").read<T>(), two));
}

}  // namespace

TEST_CASE("every dtype round-trips bit for bit, in 1, 2 and 3 dimensions, across reopening") {
  TempDir dir;
  const std::string path = dir.file("types.h5");
  {
    File f = File::create(path);
    round_trip<float>(f, "f32");
    round_trip<double>(f, "f64");
    round_trip<int32_t>(f, "i32");
    round_trip<int64_t>(f, "i64");
    round_trip<uint64_t>(f, "u64");
    round_trip<uint8_t>(f, "u8");
    f.close();
  }
  File f = File::open(path);
  CHECK(same_bits(f.dataset("f32_1d").read<float>(), sample_values<float>(13)));
  CHECK(same_bits(f.dataset("f64_2d").read<double>(), sample_values<double>(12)));
  CHECK(same_bits(f.dataset("u64_1d").read<uint64_t>(), sample_values<uint64_t>(13)));
  CHECK(f.dataset("u8_2d").dtype() == DType::u8);
  CHECK(f.dataset("i32_3d").shape() == Dims{2, 3, 2});
}

TEST_CASE("row writes, empty datasets and zero fill of fixed datasets") {
  TempDir dir;
  File f = File::create(dir.file("rows.h5"));
  Dataset d = f.create_dataset("m", DType::f32, {4, 2});
  CHECK(d.read<float>() == std::vector<float>(8, 0.0f));
  const std::vector<float> row{1.5f, -2.5f};
  d.write_rows<float>(2, row);
  CHECK(d.read_rows<float>(2, 1) == row);
  CHECK(d.read_rows<float>(0, 1) == std::vector<float>{0.0f, 0.0f});
  CHECK(d.read_rows<float>(4, 0).empty());
  Dataset empty = f.create_dataset("empty", DType::i64, {0});
  CHECK(empty.read<int64_t>().empty());
  empty.write<int64_t>(std::vector<int64_t>{});
}

TEST_CASE("extendible series append, grow, truncate and keep their content across reopening") {
  TempDir dir;
  const std::string path = dir.file("series.h5");
  {
    File f = File::create(path);
    {
      Dataset loss = f.create_extendible("series/loss", DType::f64);
      Dataset fp = f.create_extendible("series/fingerprints", DType::u64, 3, 2);
      CHECK(loss.extendible());
      CHECK(loss.shape() == Dims{0});
      CHECK(fp.shape() == Dims{0, 3});
      for (int step = 0; step < 10; ++step) {
        loss.append_rows<double>(std::vector<double>{1.0 / (step + 1)});
        fp.append_rows<uint64_t>(std::vector<uint64_t>{uint64_t(step), uint64_t(step) << 32, ~uint64_t(step)});
      }
      CHECK(loss.rows() == 10);
      CHECK(fp.shape() == Dims{10, 3});
      fp.append_rows<uint64_t>(std::vector<uint64_t>(6, 7));  // two rows at once
      CHECK(fp.rows() == 12);
    }
    f.close();  // checked: the datasets above are closed first
  }
  {
    File f = File::open(path, Mode::read_write);
    {
      Dataset loss = f.dataset("series/loss");
      Dataset fp = f.dataset("series/fingerprints");
      CHECK(loss.read<double>()[9] == 1.0 / 10);
      // Resume from the checkpoint at step 6: cut back, then re-extend.
      loss.truncate(6);
      fp.truncate(6);
      CHECK(loss.rows() == 6);
      CHECK(fp.read_rows<uint64_t>(5, 1) == std::vector<uint64_t>{5, uint64_t(5) << 32, ~uint64_t(5)});
      loss.append_rows<double>(std::vector<double>{42.0});
      loss.resize(9);  // grown rows read as zero
      CHECK(loss.read_rows<double>(6, 3) == std::vector<double>{42.0, 0.0, 0.0});
    }
    f.close();
  }
  File f = File::open(path);
  const auto loss = f.dataset("series/loss").read<double>();
  REQUIRE(loss.size() == 9);
  CHECK(loss[0] == 1.0);
  CHECK(loss[5] == 1.0 / 6);
  CHECK(loss[6] == 42.0);
}

TEST_CASE("attributes keep their type, value and order; replacing and removing work") {
  TempDir dir;
  const std::string path = dir.file("attrs.h5");
  std::string long_text(50000, 'x');  // fixed-length strings live in the object header: < 64 KiB
  long_text += "\n[model]\nvocab = 256 — ünïcode\n";
  {
    File f = File::create(path);
    f.set_attr("format_version", int64_t{1});
    f.set_attr("config", long_text);
    CHECK_THROWS_WITH_AS(f.set_attr("too_long", std::string(70000, 'x')),
                         doctest::Contains("too long for an attribute"), sb::Error);
    f.set_attr("experiment_id", "0123456789abcdef");
    f.set_attr("min", std::numeric_limits<int64_t>::min());
    f.set_attr("big", std::numeric_limits<uint64_t>::max());
    f.set_attr("pi", 3.141592653589793);
    f.set_attr("steps", std::vector<int64_t>{0, 100, 300});
    f.set_attr("seeds", std::vector<uint64_t>{~uint64_t{0}, 1});
    f.set_attr("gains", std::vector<double>{-0.0, 1e-310});
    f.set_attr("none", std::vector<double>{});
    f.set_attr("status", "running");
    f.set_attr("status", "finished");  // replaced
    Dataset d = f.create_dataset("w", DType::f32, {2});
    d.set_attr("name", "wte");
    d.set_attr("remove_me", int64_t{5});
    d.remove_attr("remove_me");
    CHECK_FALSE(d.has_attr("remove_me"));
  }
  File f = File::open(path);
  CHECK(f.attr_int("format_version") == 1);
  CHECK(f.attr_string("config") == long_text);
  CHECK(f.attr_string("experiment_id") == "0123456789abcdef");
  CHECK(f.attr_int("min") == std::numeric_limits<int64_t>::min());
  CHECK(f.attr_uint("big") == std::numeric_limits<uint64_t>::max());
  CHECK(f.attr_double("pi") == 3.141592653589793);
  CHECK(f.attr_ints("steps") == std::vector<int64_t>{0, 100, 300});
  CHECK(f.attr_uints("seeds") == std::vector<uint64_t>{~uint64_t{0}, 1});
  CHECK(same_bits(f.attr_doubles("gains"), std::vector<double>{-0.0, 1e-310}));
  CHECK(f.attr_doubles("none").empty());
  CHECK(f.attr_string("status") == "finished");
  CHECK(f.attr_names() == std::vector<std::string>{"big", "config", "experiment_id", "format_version", "gains", "min",
                                                   "none", "pi", "seeds", "status", "steps"});
  CHECK(f.dataset("w").attr_string("name") == "wte");
  CHECK(f.dataset("w").attr_names() == std::vector<std::string>{"name"});
}

TEST_CASE("groups: nested creation, lookups through missing parents, listing and removal") {
  TempDir dir;
  File f = File::create(dir.file("groups.h5"));
  Group ck = f.create_group("checkpoints/step_100");
  CHECK(ck.path() == "/checkpoints/step_100");
  ck.write_dataset<float>("params/wte", std::vector<float>{1, 2});
  CHECK(f.has("checkpoints"));
  CHECK(f.is_group("checkpoints/step_100"));
  CHECK(f.is_dataset("/checkpoints/step_100/params/wte"));
  CHECK_FALSE(f.is_group("checkpoints/step_100/params/wte"));
  CHECK_FALSE(f.has("nothing/below/here"));
  CHECK_FALSE(f.has("checkpoints/step_100/params/wte/below_a_dataset"));
  CHECK(f.is_group("/"));
  CHECK(f.has("/"));
  CHECK_FALSE(f.has(""));
  CHECK(f.group("/").path() == "/");
  f.create_group("checkpoints/step_200");
  CHECK(f.group("checkpoints").names() == std::vector<std::string>{"step_100", "step_200"});
  CHECK(f.require_group("checkpoints/step_200").path() == "/checkpoints/step_200");
  CHECK(f.require_group("snapshots").path() == "/snapshots");
  f.group("checkpoints").remove("step_100");
  CHECK(f.group("checkpoints").names() == std::vector<std::string>{"step_200"});
  CHECK(contains(error_of([&] { f.dataset("checkpoints/step_100/params/wte"); }),
                 ":/checkpoints/step_100/params/wte: no such dataset"));
}

TEST_CASE("errors name the file and the object path") {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  {
    File f = File::create(path);
    f.create_extendible("series/loss", DType::f32);
    f.write_dataset<float>("params/wte", std::vector<float>(6, 1.0f), {2, 3});
    f.set_attr("format_version", int64_t{1});
    f.close();
  }
  File f = File::open(path, Mode::read_write);
  CHECK(error_of([&] { f.dataset("series/lr"); }) == path + ":/series/lr: no such dataset");
  CHECK(error_of([&] { f.dataset("series"); }) == path + ":/series: is a group, expected a dataset");
  CHECK(error_of([&] { f.group("params/wte"); }) == path + ":/params/wte: is a dataset, expected a group");
  CHECK(error_of([&] { f.dataset("series/loss").read<double>(); }) ==
        path + ":/series/loss: holds f32 values, read as f64");
  CHECK(error_of([&] {
          f.dataset("params/wte").check(DType::f32, {3, kAny});
        }) == path + ":/params/wte: holds f32 (2, 3), expected f32 (3, *)");
  CHECK(error_of([&] {
          f.dataset("params/wte").check(DType::f64, {2, 3});
        }) == path + ":/params/wte: holds f32 (2, 3), expected f64 (2, 3)");
  CHECK_NOTHROW(f.dataset("params/wte").check(DType::f32, {kAny, 3}));
  CHECK(contains(error_of([&] { f.dataset("params/wte").read_rows<float>(1, 2); }),
                 path + ":/params/wte: rows [1, 1+2) are outside the 2 rows"));
  CHECK(contains(error_of([&] { f.dataset("params/wte").write<float>(std::vector<float>(5)); }),
                 path + ":/params/wte: writing 5 values into shape (2, 3)"));
  CHECK(contains(error_of([&] { f.dataset("params/wte").write_rows<float>(0, std::vector<float>(4)); }),
                 "4 values are not whole rows of 3"));
  CHECK(contains(error_of([&] { f.dataset("series/loss").write_rows<float>(0, std::vector<float>(1)); }),
                 "resize() or append_rows() first"));
  CHECK(contains(error_of([&] { f.dataset("params/wte").resize(5); }),
                 path + ":/params/wte: has a fixed shape (2, 3); only datasets made by create_extendible"));
  CHECK(contains(error_of([&] { f.dataset("series/loss").truncate(1); }), "cannot truncate to 1 rows, it has only 0"));
  CHECK(error_of([&] { f.attr_double("format_version"); }) ==
        path + ":/ attribute 'format_version': holds i64, expected f64");
  CHECK(error_of([&] { f.attr_string("format_version"); }) ==
        path + ":/ attribute 'format_version': holds i64, expected a string");
  CHECK(error_of([&] { f.attr_ints("format_version"); }) ==
        path + ":/ attribute 'format_version': has rank 0, expected a 1-D array");
  CHECK(error_of([&] { f.attr_int("status"); }) == path + ":/ attribute 'status': no such attribute");
  CHECK(contains(error_of([&] { f.create_group("series"); }), path + ":/series: already exists"));
  CHECK(contains(error_of([&] { f.set_attr("big", std::vector<double>(10000)); }), "store them in a dataset"));
  CHECK(contains(error_of([&] { File::create(path); }), "HDF5 file '" + path + "' already exists"));
}

TEST_CASE("missing, foreign, truncated and damaged files are clear errors") {
  TempDir dir;
  const std::string missing = dir.file("missing.h5");
  CHECK(error_of([&] { File::open(missing); }) == "HDF5 file '" + missing + "' does not exist");
  CHECK_FALSE(is_hdf5_file(missing));
  CHECK(contains(error_of([&] { File::open(dir.path.string()); }), "is not a regular file"));

  const std::string text = dir.file("config.ini");
  std::ofstream(text) << "[model]\nvocab = 256\n";
  CHECK(error_of([&] { File::open(text); }) == "'" + text + "' is not an HDF5 file (no HDF5 signature)");
  CHECK_FALSE(is_hdf5_file(text));

  const std::string good = dir.file("good.h5");
  {
    File f = File::create(good);
    f.write_dataset<double>("series/loss", std::vector<double>(4096, 2.5));
    f.set_attr("config", std::string(2000, 'c'));
    f.close();
  }
  CHECK(is_hdf5_file(good));
  const auto size = fs::file_size(good);
  for (const auto cut : {size / 2, size - 1, uintmax_t{600}}) {
    const std::string truncated = dir.file("truncated_" + std::to_string(cut) + ".h5");
    fs::copy_file(good, truncated);
    fs::resize_file(truncated, cut);
    CAPTURE(cut);
    const std::string e = error_of([&] {
      File f = File::open(truncated);
      f.dataset("series/loss").read<double>();
      f.attr_string("config");
    });
    CHECK(contains(e, truncated));
  }
  const std::string no_dir = dir.file("no/such/dir/run.h5");
  CHECK(contains(error_of([&] { File::create(no_dir); }), no_dir + ": cannot create the HDF5 file"));
}

TEST_CASE("closing: checked close, use after close, sync") {
  TempDir dir;
  File f = File::create(dir.file("close.h5"));
  f.write_dataset<int32_t>("x", std::vector<int32_t>{1, 2, 3});
  f.sync();
  {
    Dataset open_dataset = f.dataset("x");
    CHECK(contains(error_of([&] { f.close(); }), "1 groups, datasets or attributes of this file are still open"));
  }
  CHECK(f.is_open());
  f.close();
  CHECK_FALSE(f.is_open());
  CHECK(contains(error_of([&] { f.dataset("x"); }), "the object is closed"));
  CHECK(File::open(dir.file("close.h5")).dataset("x").read<int32_t>() == std::vector<int32_t>{1, 2, 3});
}

TEST_CASE("atomic writes: the old file survives a writer that throws, no temporary is left") {
  TempDir dir;
  const std::string path = dir.file("checkpoint.h5");
  const auto write_step = [&](int64_t step) {
    write_h5_atomically(path, [&](File& f) {
      f.set_attr("step", step);
      f.write_dataset<float>("params", std::vector<float>(1000, float(step)));
    });
  };
  write_step(100);
  const std::string e = error_of([&] {
    write_h5_atomically(path, [&](File& f) {
      f.set_attr("step", int64_t{200});
      f.create_dataset("params", DType::f32, {1000});
      SB_FAIL("disk full (simulated) while writing ", path);
    });
  });
  CHECK(e == "disk full (simulated) while writing " + path);
  {
    File f = File::open(path);
    CHECK(f.attr_int("step") == 100);
    CHECK(f.dataset("params").read<float>() == std::vector<float>(1000, 100.0f));
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path)) names.push_back(entry.path().filename().string());
  CHECK(names == std::vector<std::string>{"checkpoint.h5"});

  write_step(200);
  CHECK(File::open(path).attr_int("step") == 200);

  // Any file format: a plain-text writer, and a destination whose directory does not exist.
  write_file_atomically(dir.file("note.txt"), [](const std::string& tmp) { std::ofstream(tmp) << "done\n"; });
  std::ifstream note(dir.file("note.txt"));
  std::string line;
  std::getline(note, line);
  CHECK(line == "done");
  const std::string nowhere = dir.file("absent/checkpoint.h5");
  CHECK(contains(error_of([&] { write_h5_atomically(nowhere, [](File& f) { f.set_attr("step", int64_t{1}); }); }),
                 "absent/checkpoint.h5.tmp."));
  CHECK_FALSE(fs::exists(dir.path / "absent"));
}

namespace {
bool have_h5py() { return std::system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") == 0; }

int run_python(const TempDir& dir, const std::string& script) {
  const std::string file = dir.file("check.py");
  std::ofstream(file) << script;
  return std::system(("/usr/bin/python3 " + file).c_str());
}
}  // namespace

TEST_CASE("h5py reads what we write, and we read what h5py writes") {
  if (!have_h5py()) {
    MESSAGE("h5py not available (/usr/bin/python3 -c 'import h5py' failed): interoperability not checked");
    return;
  }
  TempDir dir;
  const std::string ours = dir.file("ours.h5");
  {
    File f = File::create(ours);
    f.set_attr("format_version", int64_t{1});
    f.set_attr("config", "[model]\nvocab = 256\n");
    f.set_attr("seed", std::numeric_limits<uint64_t>::max());
    f.set_attr("lr", 0.02);
    f.set_attr("snapshot_steps", std::vector<int64_t>{0, 100});
    f.create_extendible("series/loss", DType::f32).append_rows<float>(std::vector<float>{4.5f, -0.0f, 1e-45f});
    f.create_extendible("series/fingerprint", DType::u64, 2)
        .append_rows<uint64_t>(std::vector<uint64_t>{1, ~uint64_t{0}, 3, 4});
    f.write_dataset<double>("params/w", std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, {2, 3});
    f.write_dataset<int32_t>("tokens", std::vector<int32_t>{-2147483647 - 1, 7});
    f.write_dataset<int64_t>("cursor", std::vector<int64_t>{3, -4});
    f.write_dataset<uint8_t>("rng", std::vector<uint8_t>{0, 255});
    f.dataset("params/w").set_attr("kind", "matrix");
    f.close();
  }
  CHECK(
      run_python(
          dir,
          "import h5py, numpy as np, sys\n"
          "f = h5py.File('" +
              ours +
              "', 'r')\n"
              "a = f.attrs\n"
              "assert a['format_version'] == 1 and a['format_version'].dtype == np.int64\n"
              "assert a['config'] == b'[model]\\nvocab = 256\\n', a['config']\n"  // fixed-length: bytes in h5py
              "assert a['seed'] == 2**64 - 1 and a['seed'].dtype == np.uint64\n"
              "assert a['lr'] == 0.02\n"
              "assert list(a['snapshot_steps']) == [0, 100]\n"
              "loss = f['series/loss']\n"
              "assert loss.dtype == np.float32 and loss.maxshape == (None,) and loss.chunks is not None\n"
              "assert list(loss[:].view(np.uint32)) == list(np.array([4.5, -0.0, 1e-45], np.float32).view(np.uint32))\n"
              "assert f['series/fingerprint'].shape == (2, 2) and f['series/fingerprint'][0, 1] == 2**64 - 1\n"
              "assert f['params/w'].shape == (2, 3) and f['params/w'][1, 2] == 0.6\n"
              "assert f['params/w'].attrs['kind'] == b'matrix'\n"
              "assert list(f['tokens'][:]) == [-2**31, 7] and f['tokens'].dtype == np.int32\n"
              "assert list(f['cursor'][:]) == [3, -4] and list(f['rng'][:]) == [0, 255]\n"
              "assert f['rng'].dtype == np.uint8\n") == 0);

  const std::string theirs = dir.file("theirs.h5");
  REQUIRE(run_python(dir,
                     "import h5py, numpy as np\n"
                     "f = h5py.File('" +
                         theirs +
                         "', 'w')\n"
                         "f.attrs['name'] = 'h5py string'\n"
                         "f.attrs['fixed'] = np.bytes_(b'fixed ascii')\n"
                         "f.attrs['count'] = np.int64(-5)\n"
                         "f.attrs['ratio'] = 0.25\n"
                         "f.attrs['list'] = np.array([1.5, 2.5])\n"
                         "f.create_dataset('big_endian', data=np.array([1.0, -2.0, 3.5], dtype='>f4'))\n"
                         "f.create_dataset('grid', data=np.arange(6, dtype=np.uint8).reshape(2, 3))\n"
                         "f.create_dataset('half', data=np.zeros(3, dtype=np.float16))\n"
                         "f.close()\n") == 0);
  File f = File::open(theirs);
  CHECK(f.attr_string("name") == "h5py string");
  CHECK(f.attr_string("fixed") == "fixed ascii");
  CHECK(f.attr_int("count") == -5);
  CHECK(f.attr_double("ratio") == 0.25);
  CHECK(f.attr_doubles("list") == std::vector<double>{1.5, 2.5});
  CHECK(f.dataset("big_endian").read<float>() == std::vector<float>{1.0f, -2.0f, 3.5f});
  CHECK(f.dataset("grid").read<uint8_t>() == std::vector<uint8_t>{0, 1, 2, 3, 4, 5});
  CHECK(f.dataset("grid").shape() == Dims{2, 3});
  CHECK(error_of([&] { f.dataset("half").dtype(); }) ==
        theirs + ":/half: holds 16-bit float; samebits reads f32, f64, i32, i64, u64 and u8 datasets");
}
