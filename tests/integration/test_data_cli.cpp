// `samebits data synth|inspect` as a user runs them: the shard another process writes is bit for
// bit the stream generated here (identical across processes and runs), inspect reports format,
// count, range and sample, and bad input exits 2 with a message naming the file or option.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"

namespace fs = std::filesystem;
using namespace sb::data;

namespace {

// The samebits binary beside the tests: build/<preset>/bin/samebits for build/<preset>/bin/tests/.
std::string samebits_binary() {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const fs::path bin = exe.parent_path().parent_path() / "samebits";
  REQUIRE_MESSAGE(fs::exists(bin), "the samebits binary is not built at ", bin.string());
  return bin.string();
}

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cmd = samebits_binary() + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sb_cli_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("data synth writes the synthetic stream as an llm.c shard, the same in every process") {
  TempDir dir;
  const Result r = run("data synth --out " + (dir / "a.bin") + " --tokens 100000 --seed 3 --vocab 64");
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(has(r.output, "wrote 100000 tokens"));
  const ShardFiles shard(dir / "a.bin", 64);
  REQUIRE(shard.size() == 100000);
  CHECK(shard.shards()[0].version == 1);
  std::vector<int32_t> from_file(100000), here(100000);
  shard.read(0, 100000, from_file.data());
  SyntheticLanguage(SyntheticConfig{}, 64, 3, Split::train).read(0, 100000, here.data());
  CHECK(std::memcmp(from_file.data(), here.data(), 400000) == 0);
  // A second run writes the same bytes; the validation split writes other tokens.
  REQUIRE(run("data synth --out " + (dir / "b.bin") + " --tokens 100000 --seed 3 --vocab 64").code == 0);
  CHECK(file_bytes(dir / "a.bin") == file_bytes(dir / "b.bin"));
  REQUIRE(run("data synth --out " + (dir / "v.bin") + " --tokens 100000 --seed 3 --vocab 64 --split validation").code ==
          0);
  CHECK(file_bytes(dir / "a.bin") != file_bytes(dir / "v.bin"));
  // A vocabulary beyond uint16 is written as version 2.
  REQUIRE(run("data synth --out " + (dir / "big.bin") + " --tokens 1000 --vocab 70000").code == 0);
  CHECK(read_shard_header(dir / "big.bin").version == 2);
}

TEST_CASE("data inspect reports format, token count, range and a sample") {
  TempDir dir;
  REQUIRE(run("data synth --out " + (dir / "s.bin") + " --tokens 5000").code == 0);
  Result r = run("data inspect " + (dir / "s.bin") + " --sample 16");
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(has(r.output, "llm.c token shard"));
  CHECK(has(r.output, "version 1 (uint16 tokens)"));
  CHECK(has(r.output, "tokens:      5000"));
  CHECK(has(r.output, "token range: 0 .. 255"));
  CHECK(has(r.output, "first 16 tokens"));
  std::ofstream(dir / "t.txt") << "To be, or not to be\n";
  r = run("data inspect " + (dir / "t.txt"));
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(has(r.output, "bytes as tokens"));
  CHECK(has(r.output, "tokens:      20"));
  CHECK(has(r.output, "To be, or not to be"));
  r = run("data inspect synthetic --vocab 64 --tokens 65536");
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(has(r.output, "unigram entropy"));
  CHECK(has(r.output, "ideal loss"));
  CHECK(has(r.output, "bigram"));
  CHECK(run("data --help").code == 0);
}

TEST_CASE("bad input exits 2 with a message naming the file or the option") {
  TempDir dir;
  Result r = run("data inspect " + (dir / "missing.bin"));
  CHECK(r.code == 2);
  CHECK(has(r.output, "missing.bin"));
  std::vector<char> bad(1100, 0);
  const int32_t header[2] = {kShardMagic, 7};
  std::memcpy(bad.data(), header, sizeof header);
  std::ofstream(dir / "bad.bin", std::ios::binary).write(bad.data(), std::streamsize(bad.size()));
  r = run("data inspect " + (dir / "bad.bin"));
  CHECK(r.code == 2);
  CHECK(has(r.output, "bad.bin"));
  CHECK(has(r.output, "version 7"));
  r = run("data inspect '" + (dir / "none_*.bin") + "'");
  CHECK(r.code == 2);
  CHECK(has(r.output, "no file matches the glob"));
  r = run("data synth --out " + (dir / "x.bin") + " --tokens 10 --bogus 3");
  CHECK(r.code == 2);
  CHECK(has(r.output, "bogus"));
  r = run("data synth --tokens 10");
  CHECK(r.code == 2);
  CHECK(has(r.output, "--out"));
  r = run("data synth --out " + (dir / "x.bin") + " --tokens 0");
  CHECK(r.code == 2);
  CHECK(has(r.output, "--tokens"));
  r = run("data synth --out " + (dir / "x.bin") + " --tokens 10 --seed -3");
  CHECK(r.code == 2);
  CHECK(has(r.output, "--seed '-3': expected an integer"));
  r = run("data frobnicate");
  CHECK(r.code == 2);
  CHECK(has(r.output, "frobnicate"));
  CHECK(!fs::exists(dir / "x.bin"));
}
