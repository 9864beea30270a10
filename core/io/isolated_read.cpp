// isolated_read.hpp: the forked reader process. The child gets /dev/null as stdin and stdout, a pipe
// as stderr (a sanitizer report comes back as text), the answer pipe as fd 3 and nothing else,
// then limits: no core dump, no file growth (RLIMIT_FSIZE 0), no new processes, a few descriptors,
// CPU time and (without AddressSanitizer, which reserves terabytes) address space scaled to the file.
// The parent reads both pipes with a wall-clock deadline and turns every way the child can fail
// into one sb::Error. The child leaves with _exit: no atexit handler, no flush of copied buffers.
#include "samebits/core/io/isolated_read.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <new>

#include "samebits/det/error.hpp"

namespace sb::io {

void PlainReader::finish() const {
  SB_CHECK(at_ == bytes_.size(), file_, " could not be read safely: the reader's answer has ", bytes_.size() - at_,
           " bytes more than expected");
}

std::size_t PlainReader::length(std::size_t element_size) {
  const uint64_t n = get<uint64_t>();
  SB_CHECK(n <= (bytes_.size() - at_) / element_size, file_,
           " could not be read safely: the reader's answer announces ", n, " values but holds ", bytes_.size() - at_,
           " more bytes");
  return static_cast<std::size_t>(n);
}

void PlainReader::take(void* out, std::size_t n) {
  SB_CHECK(n <= bytes_.size() - at_, file_, " could not be read safely: the reader's answer ends early");
  if (n > 0) std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
}

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

constexpr char kValues = 'V', kError = 'E';
constexpr std::size_t kStderrKept = 64 << 10;

// What the reader of a file of `file_bytes` may use. Hashing and decoding run at hundreds of MB/s,
// so the CPU allowance is generous; the answer is never larger than the file's values plus the
// alignment gaps of the flat parameter buffer.
struct Limits {
  rlim_t cpu_seconds;
  uint64_t address_bytes;  // on top of what the process had mapped at the fork
  std::size_t answer_bytes;
  std::size_t expected_bytes;  // what an answer usually is: reserved, so that buffers do not regrow
  int wall_seconds;
};

Limits limits_for(uint64_t file_bytes) {
  Limits l;
  l.cpu_seconds = 20 + file_bytes / (16 << 20);
  l.address_bytes = (uint64_t{1} << 30) + 4 * file_bytes;
  l.answer_bytes = (std::size_t{64} << 20) + 4 * file_bytes;
  l.expected_bytes = (std::size_t{1} << 20) + 2 * file_bytes;
  l.wall_seconds = static_cast<int>(3 * l.cpu_seconds);
  return l;
}

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

// In the child: descriptors, limits, the read, the answer, _exit.
[[noreturn]] void reader_process(int answer_fd, int stderr_fd, const Limits& limits, const std::string& path,
                                 const std::function<void(PlainWriter&)>& read) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int high_answer = ::fcntl(answer_fd, F_DUPFD, 100);
  const int high_stderr = ::fcntl(stderr_fd, F_DUPFD, 100);
  const int null = ::open("/dev/null", O_RDWR);
  if (high_answer < 0 || high_stderr < 0 || null < 0) ::_exit(4);
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::dup2(high_stderr, 2);
  ::dup2(high_answer, 3);
  ::close_range(4, ~0U, 0);
  set_limit(RLIMIT_CORE, 0);
  set_limit(RLIMIT_FSIZE, 0);
  set_limit(RLIMIT_NPROC, 0);
  set_limit(RLIMIT_NOFILE, 16);
  const rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 1};
  ::setrlimit(RLIMIT_CPU, &cpu);
  if (!kAddressSanitizer) set_limit(RLIMIT_AS, mapped_bytes() + limits.address_bytes);

  PlainWriter answer;
  answer.bytes().reserve(limits.expected_bytes);  // untouched until written: no page is spent on growth
  char kind = kValues;
  const auto refuse = [&](const std::string& message) {
    kind = kError;
    answer = PlainWriter();
    answer.put_string(message);
  };
  try {
    read(answer);
  } catch (const Error& e) {
    refuse(e.what());
  } catch (const std::bad_alloc&) {
    refuse(path + " could not be read safely: the reader exceeded its memory limit (sizes in the file are damaged?)");
  } catch (const std::exception& e) {
    refuse(path + " could not be read safely: " + e.what());
  }
  const uint64_t size = answer.bytes().size();
  write_all(3, &kind, 1);
  write_all(3, &size, sizeof size);
  write_all(3, answer.bytes().data(), answer.bytes().size());
  ::_exit(0);
}

// The first line of the reader's stderr that says what went wrong (a sanitizer's summary), with the
// functions of the first frames of its stack ("in H5HG_read <- H5T__conv_vlen <- H5Aread"), the
// sanitizer's own frames left out: enough to tell one fault inside HDF5 from another.
std::string stderr_digest(const std::string& text) {
  std::size_t start = 0;
  std::string first, report, frames;
  int kept = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (report.empty()) {
      if ((line.find("Sanitizer") != std::string::npos && line.find("DEADLYSIGNAL") == std::string::npos) ||
          line.find("runtime error") != std::string::npos) {
        report = line;
      }
      else if (first.empty() && line.find_first_not_of(" \t=") != std::string::npos) first = line;
      continue;
    }
    const std::size_t frame = line.find_first_not_of(' '), in = line.find(" in ");
    if (frame == std::string::npos || line[frame] != '#' || in == std::string::npos) {
      if (kept > 0) break;
      continue;
    }
    const std::string function = line.substr(in + 4, line.find(' ', in + 4) - in - 4);
    if (function.rfind("__asan", 0) == 0 || function.rfind("__interceptor", 0) == 0 ||
        function.rfind("__ubsan", 0) == 0 || function == "malloc" || function == "calloc" ||
        function == "realloc" || function.rfind("__sanitizer", 0) == 0) {
      continue;
    }
    frames += (kept == 0 ? " (in " : " <- ") + function;
    if (++kept == 4) break;
  }
  if (report.empty()) return first;
  return report + (kept > 0 ? frames + ")" : "");
}

struct Collected {
  std::vector<std::byte> answer;
  std::string stderr_text;
  bool timed_out = false;
  bool too_large = false;
};

// Reads both pipes until the child closes them, the deadline passes or the answer grows too large.
Collected collect(int answer_fd, int stderr_fd, const Limits& limits) {
  Collected c;
  c.answer.reserve(limits.expected_bytes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.wall_seconds);
  pollfd fds[2] = {{answer_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
  std::byte buffer[1 << 16];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      c.timed_out = true;
      return c;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) SB_FAIL("poll on the reader process failed: ", std::strerror(errno));
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      const ssize_t got = ::read(fds[k].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[k].fd = -1;
        continue;
      }
      if (k == 0) {
        c.answer.insert(c.answer.end(), buffer, buffer + got);
        if (c.answer.size() > limits.answer_bytes) {
          c.too_large = true;
          return c;
        }
      } else if (c.stderr_text.size() < kStderrKept) {
        c.stderr_text.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(got));
      }
    }
  }
  return c;
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { SB_CHECK(::pipe2(fd, O_CLOEXEC) == 0, "cannot make a pipe for the reader process: ", std::strerror(errno)); }
  ~Pipe() { close_both(); }
  void close_end(int k) {
    if (fd[k] >= 0) ::close(fd[k]);
    fd[k] = -1;
  }
  void close_both() {
    close_end(0);
    close_end(1);
  }
};

}  // namespace

std::vector<std::byte> read_isolated(const std::string& path, const std::function<void(PlainWriter&)>& read) {
  struct stat st {};
  const uint64_t file_bytes = ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  const Limits limits = limits_for(file_bytes);
  Pipe answer, errors;
  ::fcntl(answer.fd[1], F_SETPIPE_SZ, 1 << 20);  // best effort: fewer context switches for a large answer
  const pid_t pid = ::fork();
  SB_CHECK(pid >= 0, "cannot start the reader process for ", path, ": ", std::strerror(errno));
  if (pid == 0) reader_process(answer.fd[1], errors.fd[1], limits, path, read);
  answer.close_end(1);
  errors.close_end(1);
  Collected c = collect(answer.fd[0], errors.fd[0], limits);
  if (c.timed_out || c.too_large) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string digest = stderr_digest(c.stderr_text);
  const std::string said = digest.empty() ? "" : "; it reported: " + digest;
  SB_CHECK(!c.timed_out, path, " could not be read safely: the reader process did not finish within ",
           limits.wall_seconds, " s (a decoder looping on damaged metadata?)");
  SB_CHECK(!c.too_large, path, " could not be read safely: the reader process answered more than ",
           limits.answer_bytes, " bytes");
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    SB_CHECK(sig != SIGXCPU, path, " could not be read safely: the reader process used up its ", limits.cpu_seconds,
             " s of CPU time (a decoder looping on damaged metadata?)");
    SB_FAIL(path, " could not be read safely: the reader process was killed by signal ", sig, " (", strsignal(sig),
            "), a fault inside HDF5 on damaged or crafted metadata", said);
  }
  SB_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, path,
           " could not be read safely: the reader process failed with exit status ", WEXITSTATUS(status), said);
  uint64_t size = 0;
  SB_CHECK(c.answer.size() >= 1 + sizeof size, path, " could not be read safely: the reader process gave no answer",
           said);
  std::memcpy(&size, c.answer.data() + 1, sizeof size);
  SB_CHECK(size == c.answer.size() - 1 - sizeof size, path,
           " could not be read safely: the reader's answer is incomplete");
  const char kind = static_cast<char>(c.answer[0]);
  std::vector<std::byte> payload = std::move(c.answer);
  payload.erase(payload.begin(), payload.begin() + 1 + sizeof size);
  if (kind == kError) {
    PlainReader message(payload, path);
    const std::string text = message.get_string();
    throw Error(text);
  }
  SB_CHECK(kind == kValues, path, " could not be read safely: the reader's answer is malformed");
  return payload;
}

}  // namespace sb::io
