// isolated_read.hpp: the caller's side. The request is written into its pipe before the spawn; the
// reader (reader_executable()) is started with posix_spawn — glibc's clone + exec, whose child runs
// only system calls before the exec, so a lock another thread holds (malloc, HDF5, OpenMP, MPI)
// cannot be inherited held — with /dev/null as stdin and stdout, a pipe as stderr (a sanitizer
// report comes back as text), the answer pipe as fd 3, the request as fd 4 and nothing else,
// default signal dispositions and an empty signal mask. Both pipes are read with a wall-clock
// deadline, and every way the reader can fail becomes one sb::Error.
#include "samebits/core/io/isolated_read.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include "reader_request.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {

namespace {

constexpr std::size_t kStderrKept = 64 << 10;

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
      } else if (first.empty() && line.find_first_not_of(" \t=") != std::string::npos) first = line;
      continue;
    }
    const std::size_t frame = line.find_first_not_of(' '), in = line.find(" in ");
    if (frame == std::string::npos || line[frame] != '#' || in == std::string::npos) {
      if (kept > 0) break;
      continue;
    }
    const std::string function = line.substr(in + 4, line.find(' ', in + 4) - in - 4);
    if (function.rfind("__asan", 0) == 0 || function.rfind("__interceptor", 0) == 0 ||
        function.rfind("__ubsan", 0) == 0 || function == "malloc" || function == "calloc" || function == "realloc" ||
        function.rfind("__sanitizer", 0) == 0) {
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
Collected collect(int answer_fd, int stderr_fd, const detail::Limits& limits) {
  Collected c;
  c.answer.reserve(limits.expected_bytes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.wall_seconds);
  pollfd fds[2] = {{answer_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
  std::byte buffer[1 << 16];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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

// A copy of `fd` at 10 or above (close-on-exec), so that no source of the spawn's dup2s is one of
// the targets 0–4 that an earlier dup2 replaces.
struct HighFd {
  int fd;
  explicit HighFd(int low) : fd(::fcntl(low, F_DUPFD_CLOEXEC, 10)) {
    SB_CHECK(fd >= 0, "cannot set up the reader process: ", std::strerror(errno));
  }
  ~HighFd() { ::close(fd); }
  HighFd(const HighFd&) = delete;
  HighFd& operator=(const HighFd&) = delete;
};

// The request into its pipe, whole, before the reader exists: the pipe is made large enough
// (a request is a few kB: a path, a tensor table), and a write that would block is an error.
void write_request(Pipe& pipe, const detail::Request& request) {
  ByteWriter bytes;
  detail::put_request(bytes, request);
  const std::size_t n = bytes.bytes().size();
  if (n > 65536) ::fcntl(pipe.fd[1], F_SETPIPE_SZ, static_cast<int>(std::min<std::size_t>(n, 1 << 20)));
  const int capacity = ::fcntl(pipe.fd[1], F_GETPIPE_SZ);
  SB_CHECK(capacity >= 0 && n <= static_cast<std::size_t>(capacity), "the request for the reader of ", request.path,
           " is ", n, " bytes, more than its pipe holds (", capacity, ")");
  ::fcntl(pipe.fd[1], F_SETFL, O_NONBLOCK);
  const ssize_t w = ::write(pipe.fd[1], bytes.bytes().data(), n);
  SB_CHECK(w == static_cast<ssize_t>(n), "cannot write the request for the reader of ", request.path, ": ",
           std::strerror(errno));
  pipe.close_end(1);
}

// Starts `reader` with the descriptors of the file comment; its pid.
pid_t spawn_reader(const std::string& reader, const std::string& path, int request_fd, int answer_fd, int stderr_fd) {
  const HighFd request(request_fd), answer(answer_fd), errors(stderr_fd);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, errors.fd, 2);
  posix_spawn_file_actions_adddup2(&actions, answer.fd, detail::kAnswerFd);
  posix_spawn_file_actions_adddup2(&actions, request.fd, detail::kRequestFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, detail::kRequestFd + 1);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string name = reader;
  char* argv[] = {name.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, reader.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  SB_CHECK(rc == 0, "cannot start the reader process ", reader, " for ", path, ": ", std::strerror(rc));
  return pid;
}

}  // namespace

std::string reader_executable() {
  constexpr const char* kName = "samebits-reader";
  // Beside the binary that holds this code: the samebits executable, or the Python package's
  // extension module (installed with the reader in its folder); then beside the process's
  // executable; then where the build put it.
  Dl_info here{};
  std::string holder = ::dladdr(reinterpret_cast<void*>(&reader_executable), &here) != 0 && here.dli_fname != nullptr
                           ? std::string(here.dli_fname)
                           : std::string();
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (const std::filesystem::path& binary : {std::filesystem::path(holder), ec ? std::filesystem::path() : self}) {
    if (binary.empty()) continue;
    const std::string beside = (binary.parent_path() / kName).string();
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  const std::string built = SB_READER_BUILD_PATH;
  if (::access(built.c_str(), X_OK) == 0) return built;
  SB_FAIL("the reader executable ", kName, " is neither beside ", self.string(), " nor at ", built,
          "; files from others are read only by it (install it beside samebits)");
}

std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path, const ByteWriter& params) {
  return read_isolated(kind, path, params, reader_executable());
}

std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path, const ByteWriter& params,
                                     const std::string& reader) {
  struct stat st {};
  const uint64_t file_bytes = ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  const detail::Limits limits = detail::limits_for(file_bytes);
  Pipe request, answer, errors;
  write_request(request, {static_cast<int64_t>(::getpid()), limits, kind, path, params.bytes()});
  ::fcntl(answer.fd[1], F_SETPIPE_SZ, 1 << 20);  // best effort: fewer context switches for a large answer
  const pid_t pid = spawn_reader(reader, path, request.fd[0], answer.fd[1], errors.fd[1]);
  request.close_both();
  answer.close_end(1);
  errors.close_end(1);
  Collected c = collect(answer.fd[0], errors.fd[0], limits);
  if (c.timed_out || c.too_large) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  const std::string digest = stderr_digest(c.stderr_text);
  const std::string said = digest.empty() ? "" : "; it reported: " + digest;
  SB_CHECK(!c.timed_out, path, " could not be read safely: the reader process did not finish within ",
           limits.wall_seconds, " s (a decoder looping on damaged metadata?)");
  SB_CHECK(!c.too_large, path, " could not be read safely: the reader process answered more than ", limits.answer_bytes,
           " bytes");
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    SB_CHECK(sig != SIGXCPU, path, " could not be read safely: the reader process used up its ", limits.cpu_seconds,
             " s of CPU time (a decoder looping on damaged metadata?)");
    SB_FAIL(path, " could not be read safely: the reader process was killed by signal ", sig, " (", strsignal(sig),
            "), a fault inside HDF5 on damaged or crafted metadata", said);
  }
  SB_CHECK(!WIFEXITED(status) || WEXITSTATUS(status) != 4, path, " could not be read safely: the reader ", reader,
           " is of another samebits build (it refused the request)");
  SB_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, path,
           " could not be read safely: the reader process failed with exit status ", WEXITSTATUS(status), said);
  uint64_t size = 0;
  SB_CHECK(c.answer.size() >= 1 + sizeof size, path, " could not be read safely: the reader process gave no answer",
           said);
  std::memcpy(&size, c.answer.data() + 1, sizeof size);
  SB_CHECK(size == c.answer.size() - 1 - sizeof size, path,
           " could not be read safely: the reader's answer is incomplete");
  const char answer_kind = static_cast<char>(c.answer[0]);
  std::vector<std::byte> payload = std::move(c.answer);
  payload.erase(payload.begin(), payload.begin() + 1 + sizeof size);
  if (answer_kind == detail::kError) {
    ByteReader message = answer_reader(payload, path);
    const std::string text = message.get_string();
    throw Error(text);
  }
  SB_CHECK(answer_kind == detail::kValues, path, " could not be read safely: the reader's answer is malformed");
  return payload;
}

}  // namespace sb::io
