// reader_process.hpp: the reader program. Descriptors as the caller set them at the spawn (0 and 1
// /dev/null, 2 the stderr pipe, 3 the answer, 4 the request; nothing else); the request read whole;
// then, before the file is opened, its limits on itself: no core dump, no file growth (RLIMIT_FSIZE
// 0), no new processes, a few descriptors, CPU time and (without AddressSanitizer, which reserves
// terabytes) address space scaled to the file. It leaves with _exit: no atexit handler runs.
#include "samebits/core/io/reader_process.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <new>

#include "reader_request.hpp"

namespace sb::io {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

constexpr std::size_t kMaxRequestBytes = std::size_t{16} << 20;

void write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(3);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The whole request; false when descriptor 4 is not readable (started by hand) or it is too long.
bool read_request(std::vector<std::byte>& bytes) {
  std::byte buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(detail::kRequestFd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return !bytes.empty();
    bytes.insert(bytes.end(), buffer, buffer + got);
    if (bytes.size() > kMaxRequestBytes) return false;
  }
}

uint64_t mapped_bytes() {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return uint64_t{pages} * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void set_limit(int resource, rlim_t value) {
  const rlimit l{value, value};
  ::setrlimit(resource, &l);  // best effort: a hard limit already lower stays
}

void limit_self(const detail::Limits& limits) {
  set_limit(RLIMIT_CORE, 0);
  set_limit(RLIMIT_FSIZE, 0);
  set_limit(RLIMIT_NPROC, 0);
  set_limit(RLIMIT_NOFILE, 16);
  const rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 1};
  ::setrlimit(RLIMIT_CPU, &cpu);
  if (!kAddressSanitizer) set_limit(RLIMIT_AS, mapped_bytes() + limits.address_bytes);
}

// The kind's answer, or the message of what it threw (kind byte kError).
ByteWriter answer_of(const detail::Request& request, const std::vector<ReaderKind>& kinds, char& kind) {
  ByteWriter answer;
  answer.bytes().reserve(request.limits.expected_bytes);  // untouched until written: no page is spent on growth
  kind = detail::kValues;
  const auto refuse = [&](const std::string& message) {
    kind = detail::kError;
    answer = ByteWriter();
    answer.put_string(message);
  };
  const std::string& path = request.path;
  try {
    const ReaderKind* k = nullptr;
    for (const ReaderKind& candidate : kinds) {
      if (request.kind == candidate.name) k = &candidate;
    }
    SB_CHECK(k != nullptr, path, " could not be read safely: the reader knows no kind '", request.kind,
             "' (a reader of another samebits build?)");
    ByteReader params(request.params, path + " could not be read safely: the reader's request");
    k->read(path, params, answer);
  } catch (const Error& e) {
    refuse(e.what());
  } catch (const std::bad_alloc&) {
    refuse(path + " could not be read safely: the reader exceeded its memory limit (sizes in the file are damaged?)");
  } catch (const std::exception& e) {
    refuse(path + " could not be read safely: " + e.what());
  }
  return answer;
}

}  // namespace

int reader_main(int argc, char** argv, const std::vector<ReaderKind>& kinds) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::vector<std::byte> bytes;
  if (argc != 1 || !read_request(bytes)) {
    std::fprintf(stderr,
                 "%s: the reader process of samebits (docs/FORMAT.md, 'A reader process'); samebits starts it "
                 "with a request on descriptor 4, it takes no arguments\n",
                 argc > 0 ? argv[0] : "samebits-reader");
    return 2;
  }
  ::close(detail::kRequestFd);
  detail::Request request;
  try {
    ByteReader in(bytes, "the reader's request");
    request = detail::get_request(in);
  } catch (const Error&) {
    ::_exit(4);  // not a request of this build: the caller reports "gave no answer"
  }
  if (static_cast<int64_t>(::getppid()) != request.parent) ::_exit(5);  // the caller is gone
  limit_self(request.limits);
  char kind = detail::kValues;
  const ByteWriter answer = answer_of(request, kinds, kind);
  const uint64_t size = answer.bytes().size();
  write_all(detail::kAnswerFd, &kind, 1);
  write_all(detail::kAnswerFd, &size, sizeof size);
  write_all(detail::kAnswerFd, answer.bytes().data(), answer.bytes().size());
  ::_exit(0);
}

}  // namespace sb::io
