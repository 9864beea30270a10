// reader_request.hpp: what crosses the exec to the reader process — the request (the kind, the
// file, the kind's parameters, the limits, the caller's pid) on descriptor 4, the answer (a kind
// byte, a length, the values or an error message) on descriptor 3. isolated_read.cpp writes the
// request and reads the answer; reader_process.cpp does the opposite.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/io/isolated_read.hpp"
#include "samebits/det/error.hpp"

namespace sb::io::detail {

constexpr uint32_t kReaderProtocol = 1;  // both ends are one build; a stale reader is refused by it
constexpr int kAnswerFd = 3, kRequestFd = 4;
constexpr char kValues = 'V', kError = 'E';

// What the reader of a file of `file_bytes` may use. Hashing and decoding run at hundreds of MB/s,
// so the CPU allowance is generous; the answer is never larger than the file's values plus the
// alignment gaps of the flat parameter buffer.
struct Limits {
  uint64_t cpu_seconds = 0;
  uint64_t address_bytes = 0;   // on top of what the reader has mapped when it sets the limit
  uint64_t answer_bytes = 0;    // the most the caller reads back
  uint64_t expected_bytes = 0;  // what an answer usually is: reserved, so that buffers do not regrow
  int64_t wall_seconds = 0;
};

inline Limits limits_for(uint64_t file_bytes) {
  Limits l;
  l.cpu_seconds = 20 + file_bytes / (16 << 20);
  l.address_bytes = (uint64_t{1} << 30) + 4 * file_bytes;
  l.answer_bytes = (uint64_t{64} << 20) + 4 * file_bytes;
  l.expected_bytes = (uint64_t{1} << 20) + 2 * file_bytes;
  l.wall_seconds = static_cast<int64_t>(3 * l.cpu_seconds);
  return l;
}

struct Request {
  int64_t parent = 0;  // the caller's pid: the reader stops if it is not its parent any more
  Limits limits;
  std::string kind, path;
  std::vector<std::byte> params;
};

inline void put_request(ByteWriter& out, const Request& r) {
  out.put(kReaderProtocol);
  out.put(r.parent);
  out.put(r.limits);
  out.put_string(r.kind);
  out.put_string(r.path);
  out.put_vector(r.params);
}

inline Request get_request(ByteReader& in) {
  Request r;
  SB_CHECK(in.get<uint32_t>() == kReaderProtocol, "the reader process is of another samebits build");
  r.parent = in.get<int64_t>();
  r.limits = in.get<Limits>();
  r.kind = in.get_string();
  r.path = in.get_string();
  r.params = in.get_vector<std::byte>();
  in.finish();
  return r;
}

}  // namespace sb::io::detail
