// isolated_read.hpp and untrusted_text.hpp: values come back from the reader process bit for bit;
// its sb::Errors keep their message; a crash, an abort or an attempt to write a file in it becomes
// one "could not be read safely" error; it holds no descriptor of this process but its own four;
// a missing reader executable is a clear error; a malformed answer is an error, not an
// allocation; untrusted text prints escaped and valid UTF-8 stays. The misbehaving kinds are those
// of the test reader (tests/support/reader_probe.cpp, path from the build: SB_TEST_READER).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "samebits/core/io/isolated_read.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

using sb::ByteReader;
using sb::ByteWriter;

namespace {
std::vector<std::byte> probe(const std::string& kind, const ByteWriter& params = ByteWriter(),
                             const std::string& path = "/proc/self/exe") {
  return sb::io::read_isolated(kind, path, params, SB_TEST_READER);
}
std::string error_of(const std::string& kind, const ByteWriter& params = ByteWriter(),
                     const std::string& path = "/proc/self/exe") {
  try {
    probe(kind, params, path);
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the reader process hands back values bit for bit, in a process of its own") {
  const std::vector<float> values{1.5f, -0.0f, std::nanf("0x7abc"), 3e-39f};
  ByteWriter params;
  params.put(int64_t{-7});
  params.put_string("h.0.attn.qkv.w");
  params.put_vector(values);
  ByteWriter request;
  request.put_vector(params.bytes());
  const auto answer = probe("echo", request);
  ByteReader in = sb::io::answer_reader(answer, "x");
  CHECK(in.get_string() == "/proc/self/exe");
  const std::vector<std::byte> echoed = in.get_vector<std::byte>();
  CHECK(echoed == params.bytes());
  CHECK(in.get<int64_t>() != int64_t{::getpid()});
  in.finish();
  ByteReader back = sb::io::answer_reader(echoed, "x");
  CHECK(back.get<int64_t>() == -7);
  CHECK(back.get_string() == "h.0.attn.qkv.w");
  const std::vector<float> floats = back.get_vector<float>();
  REQUIRE(floats.size() == values.size());
  CHECK(std::memcmp(floats.data(), values.data(), values.size() * sizeof(float)) == 0);
}

TEST_CASE("an sb::Error in the reader keeps its message; an unknown kind is one") {
  ByteWriter message;
  message.put_string("run.h5: attribute steps = -1 is outside [1, 2^32]");
  CHECK(error_of("fail", message) == "run.h5: attribute steps = -1 is outside [1, 2^32]");
  CHECK(error_of("no such kind")
            .find("/proc/self/exe could not be read safely: the reader knows no kind 'no such kind'") == 0);
}

TEST_CASE("a crash in the reader is one clear error") {
  // Under AddressSanitizer the reader reports the fault itself and exits 1 instead of dying of it.
  const std::string segv = error_of("segv");
  CAPTURE(segv);
  CHECK(segv.find("/proc/self/exe could not be read safely: the reader process ") == 0);
  CHECK((segv.find("killed by signal 11") != std::string::npos ||
         segv.find("ERROR: AddressSanitizer: SEGV") != std::string::npos));
  CHECK(error_of("abort").find("could not be read safely") != std::string::npos);
  CHECK(error_of("exit5").find("failed with exit status 5") != std::string::npos);
}

TEST_CASE("the reader cannot write files") {
  char tmpl[] = "/tmp/sb_isolated_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  const std::string path = tmpl;
  const std::string message = error_of("write", ByteWriter(), path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  CHECK(std::fgetc(f) == EOF);  // still empty
  std::fclose(f);
  std::remove(path.c_str());
  CHECK(message.find("killed by signal " + std::to_string(SIGXFSZ)) != std::string::npos);
}

TEST_CASE("the reader holds /dev/null, its stderr and its answer pipe, no descriptor of this process") {
  const int inherited = ::open("/proc/self/exe", O_RDONLY);  // not close-on-exec
  REQUIRE(inherited >= 0);
  const auto answer = probe("descriptors");
  ::close(inherited);
  ByteReader in = sb::io::answer_reader(answer, "x");
  CHECK(in.get_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3});
  in.finish();
}

TEST_CASE("the reader executable is found; a missing one is a clear error") {
  CHECK(sb::io::reader_executable().find("samebits-reader") != std::string::npos);
  CHECK_THROWS_WITH_AS(sb::io::read_isolated("run", "/proc/self/exe", ByteWriter(), "/nonexistent/samebits-reader"),
                       doctest::Contains("cannot start the reader process /nonexistent/samebits-reader"), sb::Error);
}

TEST_CASE("a malformed answer is an error before anything is allocated") {
  ByteWriter w;
  w.put(uint64_t{1} << 60);  // an array "of 2^60 values" with nothing after it
  ByteReader in = sb::io::answer_reader(w.bytes(), "run.h5");
  CHECK_THROWS_WITH_AS(in.get_vector<float>(), doctest::Contains("run.h5 could not be read safely"), sb::Error);
  ByteReader short_in = sb::io::answer_reader(w.bytes(), "run.h5");
  short_in.get<uint32_t>();
  CHECK_THROWS_AS(short_in.finish(), sb::Error);
}

TEST_CASE("untrusted text prints escaped; valid UTF-8 stays") {
  CHECK(sb::escape_untrusted("h.0\x1b[31mred") == "h.0\\x1b[31mred");
  CHECK(sb::escape_untrusted("a\nb\tc\x7f") == "a\\x0ab\\x09c\\x7f");
  CHECK(sb::escape_untrusted("wte \xe2\x80\x94 ok \xc3\xa9") == "wte \xe2\x80\x94 ok \xc3\xa9");
  CHECK(sb::escape_untrusted("\xff\xc3") == "\\xff\\xc3");               // invalid, truncated
  CHECK(sb::escape_untrusted("\xc0\xaf") == "\\xc0\\xaf");               // overlong '/'
  CHECK(sb::escape_untrusted("\xed\xa0\x80") == "\\xed\\xa0\\x80");      // a surrogate
  CHECK(sb::escape_untrusted("\xc2\x9b") == "\\xc2\\x9b");               // C1 CSI
  CHECK(sb::escape_untrusted("x\xe2\x80\xaey") == "x\\xe2\\x80\\xaey");  // right-to-left override
}
