// Token files: llm.c shards (both versions, several files read as one stream, atomic writing), text
// as bytes, HDF5 token datasets, open_source — and every bad input as a clear sb::Error
// naming the file and what was wrong (run under ASan/UBSan in the debug preset: nothing crashes).
#include <doctest/doctest.h>
#include <hdf5.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "samebits/core/io/token_files.hpp"
#include "samebits/data/hdf5_tokens.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/text_file.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"
#include "support/token_files.hpp"

using namespace sb::data;
namespace fs = std::filesystem;

namespace {

// HDF5 token files are decoded as samebits decodes them: in the reader process, whose errors keep
// their message.
const Hdf5Decoder decode = sb::io::isolated_hdf5_decoder();

// A fresh directory under the system temp folder, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sb_data_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

using sbt::error_of;

// Checks that f throws an sb::Error whose message holds every part.
void check_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  const std::string msg = error_of(f);
  for (const std::string& p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "'", msg, "' lacks '", p, "'");
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A raw shard: header (magic, version, count) then `body` bytes.
std::vector<uint8_t> raw_shard(int32_t magic, int32_t version, int32_t count, size_t body) {
  std::vector<uint8_t> b(kShardHeaderBytes + body, 0);
  const int32_t h[3] = {magic, version, count};
  std::memcpy(b.data(), h, sizeof h);
  for (size_t i = 0; i < body; ++i) b[kShardHeaderBytes + i] = uint8_t(i % 7);
  return b;
}

std::vector<int32_t> iota_tokens(size_t n, int32_t start, int32_t modulo) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = (start + int32_t(i)) % modulo;
  return t;
}

void write_shard(const std::string& path, const std::vector<int32_t>& tokens, int version) {
  ShardWriter w(path, version);
  w.append(tokens.data(), tokens.size());
  w.finish();
}

std::vector<int32_t> read_all(const TokenSource& s) {
  std::vector<int32_t> out(s.size());
  s.read(0, out.size(), out.data());
  return out;
}

void write_h5(const std::string& path, const std::string& name, hid_t type, const void* data,
              std::vector<hsize_t> dims) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  const hid_t ds = H5Dcreate2(f, name.c_str(), type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Sclose(space);
  H5Fclose(f);
}

}  // namespace

TEST_CASE("shards: both versions read back exactly; several files are one stream in sorted order") {
  TempDir dir;
  const std::vector<int32_t> a = iota_tokens(1000, 0, 65536), b = iota_tokens(10, 5, 65536);
  const std::vector<int32_t> c = iota_tokens(2000, 60000, 100000);
  write_shard(dir / "train_000.bin", a, 1);
  write_shard(dir / "train_001.bin", b, 1);
  write_shard(dir / "train_002.bin", std::vector<int32_t>{}, 1);
  write_shard(dir / "train_003.bin", c, 2);
  CHECK(read_shard_header(dir / "train_003.bin").version == 2);
  CHECK(fs::file_size(dir / "train_000.bin") == 1024 + 2000);
  const ShardFiles one(dir / "train_003.bin", 100000);
  CHECK(read_all(one) == c);
  const ShardFiles all(dir / "train_*.bin", 100000);
  REQUIRE(all.size() == 3010);
  REQUIRE(all.shards().size() == 4);
  std::vector<int32_t> joined = a;
  joined.insert(joined.end(), b.begin(), b.end());
  joined.insert(joined.end(), c.begin(), c.end());
  CHECK(read_all(all) == joined);
  // Windows that cross file boundaries (and the empty file).
  for (uint64_t pos : {995ull, 999ull, 1000ull, 1005ull, 1009ull, 1010ull}) {
    std::vector<int32_t> w(20);
    all.read(pos, 20, w.data());
    CHECK(std::memcmp(w.data(), joined.data() + pos, 80) == 0);
  }
  CHECK(all.describe() == "shards '" + (dir / "train_*.bin") + "' (4 files, 3010 tokens)");
}

TEST_CASE("the shard writer is atomic: an unfinished writer leaves the old file untouched") {
  TempDir dir;
  write_shard(dir / "x.bin", iota_tokens(5, 0, 10), 1);
  {
    ShardWriter w(dir / "x.bin", 1);
    w.append(iota_tokens(100, 0, 10).data(), 100);
  }
  CHECK(read_shard_header(dir / "x.bin").tokens == 5);
  CHECK(!fs::exists(dir / "x.bin.tmp"));
  ShardWriter w(dir / "y.bin", 1);
  const std::vector<int32_t> big{70000};
  check_error([&] { w.append(big.data(), 1); }, {"y.bin", "token 70000 does not fit version 1"});
}

TEST_CASE("bad shards: missing, empty glob, magic, version, truncated, size mismatch, token >= vocab") {
  TempDir dir;
  check_error([&] { ShardFiles(dir / "missing.bin", 256); }, {"no such file", "missing.bin"});
  check_error([&] { ShardFiles(dir / "none_*.bin", 256); }, {"no file matches the glob", "none_*.bin"});
  check_error([&] { ShardFiles(dir / "no_dir/train_*.bin", 256); },
              {"no_dir/train_*.bin", "does not exist or is not readable"});
  write_bytes(dir / "magic.bin", raw_shard(12345, 1, 10, 20));
  check_error([&] { ShardFiles(dir / "magic.bin", 256); }, {"magic.bin", "magic number 12345, expected 20240520"});
  write_bytes(dir / "version.bin", raw_shard(kShardMagic, 3, 10, 20));
  check_error([&] { ShardFiles(dir / "version.bin", 256); }, {"version.bin", "version 3, expected 1"});
  write_bytes(dir / "short_header.bin", std::vector<uint8_t>(100, 0));
  check_error([&] { ShardFiles(dir / "short_header.bin", 256); },
              {"short_header.bin", "100 bytes, shorter than the 1024-byte header"});
  write_bytes(dir / "empty.bin", {});
  check_error([&] { ShardFiles(dir / "empty.bin", 256); }, {"empty.bin", "0 bytes"});
  write_bytes(dir / "truncated.bin", raw_shard(kShardMagic, 1, 10, 19));
  check_error([&] { ShardFiles(dir / "truncated.bin", 256); },
              {"truncated.bin", "is truncated: the header says 10 tokens (1044 bytes", "has 1043 bytes"});
  write_bytes(dir / "long.bin", raw_shard(kShardMagic, 2, 10, 44));
  check_error([&] { ShardFiles(dir / "long.bin", 256); },
              {"long.bin", "header says 10 tokens (1064 bytes with the header) but the file has 1068 bytes"});
  write_bytes(dir / "negative.bin", raw_shard(kShardMagic, 1, -5, 0));
  check_error([&] { ShardFiles(dir / "negative.bin", 256); }, {"negative.bin", "negative token count -5"});
  // One bad file in a glob names that file.
  write_shard(dir / "g_0.bin", iota_tokens(50, 0, 256), 1);
  write_bytes(dir / "g_1.bin", raw_shard(kShardMagic, 1, 10, 2));
  check_error([&] { ShardFiles(dir / "g_*.bin", 256); }, {"g_1.bin", "truncated"});
  // Tokens beyond the vocabulary: reported when read, with the file and position.
  write_shard(dir / "vocab.bin", iota_tokens(300, 0, 1000), 1);
  const ShardFiles v(dir / "vocab.bin", 256);
  std::vector<int32_t> out(300);
  v.read(0, 256, out.data());
  check_error([&] { v.read(200, 100, out.data()); }, {"vocab.bin", "token 256 at token position 256 is >= vocab 256"});
  write_shard(dir / "vocab2.bin", std::vector<int32_t>{1, 2, 2000000000}, 2);
  check_error([&] { read_all(ShardFiles(dir / "vocab2.bin", 50257)); },
              {"vocab2.bin", "token 2000000000 at token position 2"});
  check_error([&] { v.read(290, 11, out.data()); }, {"window [290, 301) is outside the 300 tokens"});
  // A directory is not a shard.
  fs::create_directory(dir / "dir.bin");
  check_error([&] { ShardFiles(dir / "dir.bin", 256); }, {"dir.bin", "not a regular file but a directory"});
}

TEST_CASE("dataset smaller than one sequence: the sampler names the data and the sizes") {
  TempDir dir;
  write_shard(dir / "small.bin", iota_tokens(64, 0, 256), 1);
  const ShardFiles s(dir / "small.bin", 256);
  check_error([&] { Sampler(s, 64, 1, 1, 1); },
              {"small.bin", "64 tokens, fewer than one sequence of seq_len + 1 = 65 tokens"});
  const Sampler ok(s, 63, 1, 1, 1);
  CHECK(ok.windows() == 1);
}

TEST_CASE("text files are byte tokens") {
  TempDir dir;
  const std::string text = "hello, world\n\xff\x01";
  write_bytes(dir / "t.txt", std::vector<uint8_t>(text.begin(), text.end()));
  const TextFile t(dir / "t.txt", 256);
  REQUIRE(t.size() == text.size());
  const std::vector<int32_t> tok = read_all(t);
  for (size_t i = 0; i < text.size(); ++i) CHECK(tok[i] == int32_t(uint8_t(text[i])));
  const TextFile narrow(dir / "t.txt", 128);
  std::vector<int32_t> out(14);
  narrow.read(0, 13, out.data());
  check_error([&] { narrow.read(0, 14, out.data()); }, {"t.txt", "byte 255 at position 13 is >= vocab 128"});
  check_error([&] { TextFile(dir / "missing.txt", 256); }, {"cannot open", "missing.txt", "No such file"});
  write_bytes(dir / "empty.txt", {});
  const TextFile empty(dir / "empty.txt", 256);
  CHECK(empty.size() == 0);
  check_error([&] { Sampler(empty, 8, 1, 1, 1); }, {"empty.txt", "0 tokens, fewer than one sequence"});
}

TEST_CASE("HDF5 token datasets: integer types of any width read exactly") {
  TempDir dir;
  const std::vector<int64_t> v64 = {0, 5, 255, 17, 3};
  const std::vector<uint16_t> v16 = {1, 2, 60000};
  write_h5(dir / "a.h5", "/tokens", H5T_NATIVE_INT64, v64.data(), {5});
  write_h5(dir / "b.h5", "/train/ids", H5T_NATIVE_UINT16, v16.data(), {3});
  const Hdf5Tokens a(dir / "a.h5" + ":/tokens", 256, decode);
  CHECK(read_all(a) == std::vector<int32_t>{0, 5, 255, 17, 3});
  const Hdf5Tokens b(dir / "b.h5" + ":/train/ids", 65536, decode);
  CHECK(read_all(b) == std::vector<int32_t>{1, 2, 60000});
  CHECK(split_hdf5_path("x:y.h5:/a/b") == std::pair<std::string, std::string>{"x:y.h5", "/a/b"});
}

TEST_CASE("bad HDF5 input: each error names the file and the dataset") {
  TempDir dir;
  const std::vector<double> f = {1.0, 2.0};
  const std::vector<int32_t> grid = {1, 2, 3, 4}, neg = {1, -2};
  write_h5(dir / "f.h5", "/tokens", H5T_NATIVE_DOUBLE, f.data(), {2});
  write_h5(dir / "g.h5", "/tokens", H5T_NATIVE_INT32, grid.data(), {2, 2});
  write_h5(dir / "n.h5", "/tokens", H5T_NATIVE_INT32, neg.data(), {2});
  write_bytes(dir / "text.h5", {'n', 'o', 't', ' ', 'h', 'd', 'f'});
  check_error([&] { Hdf5Tokens(dir / "missing.h5:/tokens", 256, decode); }, {"missing.h5", "no such file"});
  check_error([&] { Hdf5Tokens(dir / "text.h5:/tokens", 256, decode); }, {"text.h5", "no room for a superblock"});
  check_error([&] { Hdf5Tokens(dir / "f.h5:/nothing", 256, decode); }, {"f.h5", "has no dataset '/nothing'"});
  check_error([&] { Hdf5Tokens(dir / "f.h5:/tokens", 256, decode); },
              {"f.h5", "'/tokens'", "holds floating-point values, expected integer token ids"});
  check_error([&] { Hdf5Tokens(dir / "g.h5:/tokens", 256, decode); }, {"g.h5", "has rank 2, expected a 1-D dataset"});
  check_error([&] { Hdf5Tokens(dir / "n.h5:/tokens", 256, decode); },
              {"n.h5", "token -2 at position 1 is outside the vocabulary"});
  check_error([&] { Hdf5Tokens(dir / "n.h5:/tokens", 1, decode); }, {"n.h5", "token 1 at position 0"});
  check_error([&] { Hdf5Tokens(dir / "f.h5", 256, decode); },
              {"f.h5", "must name the file and the dataset: FILE.h5:/dataset"});
  // Read in the reader process behind the structure walk, which knows no filters: a compressed
  // dataset is refused, saying what is read.
  sbt::write_token_h5(dir / "z.h5", "/tokens", H5T_STD_U16LE, {1, 2, 3}, 2, true);
  check_error([&] { Hdf5Tokens(dir / "z.h5:/tokens", 256, decode); },
              {"z.h5", "no filters (no compression)", "refused before HDF5 read it"});
}

TEST_CASE("open_source: the config picks the source; missing paths and unknown sources are errors") {
  TempDir dir;
  write_shard(dir / "s.bin", iota_tokens(100, 0, 256), 1);
  DataConfig cfg;
  CHECK(open_source(cfg, Split::train, decode)->size() == TokenSource::kInfinite);
  CHECK(open_source(cfg, Split::validation, decode)->describe().find("validation stream") != std::string::npos);
  cfg.source = "shards";
  check_error([&] { open_source(cfg, Split::train, decode); }, {"data.source=shards needs data.path"});
  cfg.path = dir / "s.bin";
  CHECK(open_source(cfg, Split::train, decode)->size() == 100);
  check_error([&] { open_source(cfg, Split::validation, decode); }, {"needs data.val_path"});
  cfg.source = "text";
  CHECK(open_source(cfg, Split::train, decode)->size() == 1224);  // the shard read as bytes
  cfg.source = "parquet";
  check_error([&] { open_source(cfg, Split::train, decode); }, {"data.source='parquet' is not a source"});
  cfg.source = "synthetic";
  cfg.vocab = 0;
  check_error([&] { open_source(cfg, Split::train, decode); }, {"model.vocab=0"});
}
