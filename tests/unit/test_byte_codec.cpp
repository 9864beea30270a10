// The one byte serializer (byte_codec.hpp): values, strings and arrays come back bit for bit, and
// every malformed answer — cut short, a length beyond the bytes left, bytes left over — is one
// sb::Error naming the bytes (and the hint), before anything is allocated for a length.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samebits/core/byte_codec.hpp"
#include "samebits/det/error.hpp"

namespace {

struct Pair {
  int32_t a;
  double b;
};

std::string error_of(const std::vector<std::byte>& bytes, void (*read)(sb::ByteReader&)) {
  sb::ByteReader r(bytes, "the answer", "; try again");
  try {
    read(r);
    r.finish();
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("byte codec: values, strings and arrays round-trip bit for bit") {
  const std::vector<float> floats = {-0.0f, std::numeric_limits<float>::quiet_NaN(), 1e-45f, 3.5f};
  std::vector<uint32_t> nan_bits(1, 0x7fa00001u);  // a NaN payload
  sb::ByteWriter w;
  w.put(int64_t{-7});
  w.put(Pair{3, -0.25});
  w.put_string(std::string("a\0b", 3));
  w.put_vector(floats);
  w.put_vector(nan_bits);
  w.put_string("");
  sb::ByteReader r(w.bytes(), "test");
  CHECK(r.get<int64_t>() == -7);
  const Pair p = r.get<Pair>();
  CHECK(p.a == 3);
  CHECK(p.b == -0.25);
  CHECK(r.get_string() == std::string("a\0b", 3));
  const std::vector<float> back = r.get_vector<float>();
  REQUIRE(back.size() == floats.size());
  CHECK(std::memcmp(back.data(), floats.data(), floats.size() * sizeof(float)) == 0);
  CHECK(r.get_vector<uint32_t>() == nan_bits);
  CHECK(r.get_string().empty());
  r.finish();
  CHECK(w.bytes().size() == 8 + sizeof(Pair) + (8 + 3) + (8 + 16) + (8 + 4) + 8);
}

TEST_CASE("byte codec: a short answer, an impossible length and left-over bytes are errors") {
  sb::ByteWriter w;
  w.put(uint64_t{3});  // announces 3 floats, holds 8 bytes
  w.put(uint64_t{0});
  CHECK(error_of(w.bytes(), [](sb::ByteReader& r) { r.get_vector<float>(); }) ==
        "the answer announces 3 values but holds 8 more bytes; try again");
  sb::ByteWriter huge;
  huge.put(~uint64_t{0});  // 2^64 - 1 elements: refused before any allocation
  CHECK(error_of(huge.bytes(), [](sb::ByteReader& r) { r.get_vector<double>(); }) ==
        "the answer announces 18446744073709551615 values but holds 0 more bytes; try again");
  CHECK(error_of(huge.bytes(), [](sb::ByteReader& r) { r.get<Pair>(); }) == "the answer ends early; try again");
  CHECK(error_of(huge.bytes(), [](sb::ByteReader& r) { r.get<uint32_t>(); }) ==
        "the answer has 4 bytes more than expected; try again");
  CHECK(error_of(huge.bytes(), [](sb::ByteReader& r) { r.get<uint64_t>(); }) == "(no error)");
}
