// test_reader_probe: samebits-reader with kinds that misbehave on purpose, for test_isolated_read —
// values put back verbatim, an sb::Error, a segfault, an abort, an exit, a write to a file, the
// descriptors it holds. The
// production reader knows none of them.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "samebits/core/io/reader_process.hpp"
#include "samebits/det/error.hpp"

namespace {

using sb::ByteReader;
using sb::ByteWriter;

// Puts back the path, the bytes sent (one array) and the reader's own pid.
void echo(const std::string& path, ByteReader& params, ByteWriter& out) {
  out.put_string(path);
  out.put_vector(params.get_vector<std::byte>());
  params.finish();
  out.put(int64_t{::getpid()});
}
void fail(const std::string&, ByteReader& params, ByteWriter&) { SB_FAIL(params.get_string()); }
void segv(const std::string&, ByteReader&, ByteWriter&) { ::raise(SIGSEGV); }
void abort_now(const std::string&, ByteReader&, ByteWriter&) { std::abort(); }
void exit5(const std::string&, ByteReader&, ByteWriter&) { ::_exit(5); }
// Appends a byte to the file at `path` (the file limit must stop it).
void write_file(const std::string& path, ByteReader&, ByteWriter& out) {
  const int w = ::open(path.c_str(), O_WRONLY | O_APPEND);
  const ssize_t n = w >= 0 ? ::write(w, "x", 1) : -1;
  out.put(int64_t{n});
}
// The descriptors open in the reader.
void descriptors(const std::string&, ByteReader&, ByteWriter& out) {
  std::vector<int32_t> open;
  for (int fd = 0; fd < 1024; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) open.push_back(fd);
  }
  out.put_vector(open);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<sb::io::ReaderKind> kinds = sb::io::samebits_reader_kinds();
  kinds.insert(kinds.end(), {{"echo", echo},
                             {"fail", fail},
                             {"segv", segv},
                             {"abort", abort_now},
                             {"exit5", exit5},
                             {"write", write_file},
                             {"descriptors", descriptors}});
  return sb::io::reader_main(argc, argv, kinds);
}
