// isolated_read.hpp and untrusted_text.hpp: values come back from the reader process bit for bit;
// its sb::Errors keep their message; a crash, an abort or an attempt to write a file in it becomes
// one "could not be read safely" error and leaves this process untouched; a malformed answer is an
// error, not an allocation; untrusted text prints escaped and valid UTF-8 stays.
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

using sb::io::PlainReader;
using sb::io::PlainWriter;
using sb::io::read_isolated;

namespace {
std::string error_of(const std::function<void(PlainWriter&)>& read) {
  try {
    read_isolated("/proc/self/exe", read);
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the reader process hands back values bit for bit") {
  const std::vector<float> values{1.5f, -0.0f, std::nanf("0x7abc"), 3e-39f};
  const auto answer = read_isolated("/proc/self/exe", [&](PlainWriter& out) {
    out.put(int64_t{-7});
    out.put_string("h.0.attn.qkv.w");
    out.put_vector(values);
  });
  PlainReader in(answer, "x");
  CHECK(in.get<int64_t>() == -7);
  CHECK(in.get_string() == "h.0.attn.qkv.w");
  const std::vector<float> back = in.get_vector<float>();
  REQUIRE(back.size() == values.size());
  CHECK(std::memcmp(back.data(), values.data(), values.size() * sizeof(float)) == 0);
  in.finish();
}

TEST_CASE("an sb::Error in the reader keeps its message") {
  CHECK(error_of([](PlainWriter&) { SB_FAIL("run.h5: attribute steps = -1 is outside [1, 2^32]"); }) ==
        "run.h5: attribute steps = -1 is outside [1, 2^32]");
}

TEST_CASE("a crash in the reader is one clear error, and this process is untouched") {
  int touched = 0;
  const std::string segv = error_of([&](PlainWriter&) {
    touched = 1;
    ::raise(SIGSEGV);
  });
  CHECK(segv.find("/proc/self/exe could not be read safely: the reader process was killed by signal 11") == 0);
  CHECK(touched == 0);
  CHECK(error_of([](PlainWriter&) { std::abort(); }).find("could not be read safely") != std::string::npos);
  CHECK(error_of([](PlainWriter&) { ::_exit(5); }).find("failed with exit status 5") != std::string::npos);
}

TEST_CASE("the reader cannot write files") {
  char tmpl[] = "/tmp/sb_isolated_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  ::close(fd);
  const std::string path = tmpl;
  const std::string message = error_of([&](PlainWriter& out) {
    const int w = ::open(path.c_str(), O_WRONLY | O_APPEND);
    const ssize_t n = w >= 0 ? ::write(w, "x", 1) : -1;
    out.put(int64_t{n});
  });
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  CHECK(std::fgetc(f) == EOF);  // still empty
  std::fclose(f);
  std::remove(path.c_str());
  CHECK(message.find("killed by signal " + std::to_string(SIGXFSZ)) != std::string::npos);
}

TEST_CASE("a malformed answer is an error before anything is allocated") {
  PlainWriter w;
  w.put(uint64_t{1} << 60);  // an array "of 2^60 values" with nothing after it
  PlainReader in(w.bytes(), "run.h5");
  CHECK_THROWS_WITH_AS(in.get_vector<float>(), doctest::Contains("run.h5 could not be read safely"), sb::Error);
  PlainReader short_in(w.bytes(), "run.h5");
  short_in.get<uint32_t>();
  CHECK_THROWS_AS(short_in.finish(), sb::Error);
}

TEST_CASE("untrusted text prints escaped; valid UTF-8 stays") {
  CHECK(sb::escape_untrusted("h.0\x1b[31mred") == "h.0\\x1b[31mred");
  CHECK(sb::escape_untrusted("a\nb\tc\x7f") == "a\\x0ab\\x09c\\x7f");
  CHECK(sb::escape_untrusted("wte \xe2\x80\x94 ok \xc3\xa9") == "wte \xe2\x80\x94 ok \xc3\xa9");
  CHECK(sb::escape_untrusted("\xff\xc3") == "\\xff\\xc3");                   // invalid, truncated
  CHECK(sb::escape_untrusted("\xc0\xaf") == "\\xc0\\xaf");                   // overlong '/'
  CHECK(sb::escape_untrusted("\xed\xa0\x80") == "\\xed\\xa0\\x80");          // a surrogate
  CHECK(sb::escape_untrusted("\xc2\x9b") == "\\xc2\\x9b");                   // C1 CSI
  CHECK(sb::escape_untrusted("x\xe2\x80\xaey") == "x\\xe2\\x80\\xaey");      // right-to-left override
}
