// Helpers of the run-store CLI tests (test_cli_*, test_crash_resume*, test_damaged_files*): run
// the samebits binary beside the tests as a child process (optionally with a file-size limit, or
// killed after a delay), tiny configs, and the comparison of two run files' content — every
// dataset bitwise except /timing, every attribute except host and time_* (docs/FORMAT.md).
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/error.hpp"

namespace sbt {

namespace fs = std::filesystem;

// The samebits binary beside the tests: build/<dir>/bin/samebits for build/<dir>/bin/tests/.
inline std::string samebits_binary() {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const fs::path bin = exe.parent_path().parent_path() / "samebits";
  REQUIRE_MESSAGE(fs::exists(bin), "the samebits binary is not built at ", bin.string());
  return bin.string();
}

struct Result {
  int code = -1;           // exit status, -1 when killed by a signal
  int signal = 0;          // the signal that ended it, 0 when it exited
  std::string output;      // stdout and stderr
  bool timed_out = false;  // killed after SpawnOptions::timeout_seconds
};

struct SpawnOptions {
  uint64_t file_size_limit = 0;  // RLIMIT_FSIZE in bytes (0: none); SIGXFSZ ignored, so writes fail
  std::string cwd;               // working directory ("" = this one)
  int timeout_seconds = 0;       // killed with SIGKILL after this long (0: no limit)
};

// A running samebits process whose stdout and stderr go to one pipe.
class Child {
 public:
  Child(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string bin = samebits_binary();
    std::vector<std::string> argv_store{bin};
    argv_store.insert(argv_store.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(127);
      if (options.file_size_limit > 0) {
        ::signal(SIGXFSZ, SIG_IGN);
        const rlimit lim{options.file_size_limit, options.file_size_limit};
        ::setrlimit(RLIMIT_FSIZE, &lim);
      }
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
    timeout_seconds_ = options.timeout_seconds;
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  void kill(int sig) { ::kill(pid_, sig); }

  // Reads the output to its end and reaps the process.
  Result wait() {
    Result r;
    std::array<char, 4096> buf{};
    ssize_t n = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds_);
    for (;;) {
      if (timeout_seconds_ > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd_, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, int(left.count())) == 0) {
          r.timed_out = true;
          ::kill(pid_, SIGKILL);
          break;
        }
      }
      n = ::read(fd_, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      r.output.append(buf.data(), size_t(n));
    }
    ::close(fd_);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
    pid_ = -1;
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    return r;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int timeout_seconds_ = 0;
};

inline Result run(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
  Child c(args, options);
  return c.wait();
}

// "exit 2, signal 0: <output>" for failure messages.
inline std::string describe(const Result& r) {
  return "exit " + std::to_string(r.code) + ", signal " + std::to_string(r.signal) + ":\n" + r.output;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sb_run_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

inline std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

// A tiny experiment (1 layer, 32 wide, seq 16, vocab 64, 4 leaves): 20 steps in well under a
// second. `extra` lines are appended (later keys must not repeat earlier ones).
inline std::string tiny_config(const std::string& train_extra = "", int n_embd = 32) {
  return "[model]\nvocab = 64\nseq_len = 16\nn_layer = 1\nn_head = 2\nn_embd = " + std::to_string(n_embd) +
         "\n[data]\nleaf_size = 1\nleaves = 4\n"
         "[train]\nsteps = 20\nwarmup = 2\neval_every = 10\neval_leaves = 2\n" +
         train_extra + "[run]\nthreads = 1\nlog_every = 100\nprogress = off\n";
}

// ---- run-file content ---------------------------------------------------------------------------

// An attribute as text whatever its type ("s:…", "i:…", "u:…", "d:<bits>", arrays as lists).
inline std::string attribute_text(const sb::h5::Object& o, const std::string& name) {
  const auto hex_bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return std::to_string(u);
  };
  try {
    return "s:" + o.attr_string(name);
  } catch (const sb::Error&) {}
  try {
    return "i:" + std::to_string(o.attr_int(name));
  } catch (const sb::Error&) {}
  try {
    return "u:" + std::to_string(o.attr_uint(name));
  } catch (const sb::Error&) {}
  try {
    return "d:" + hex_bits(o.attr_double(name));
  } catch (const sb::Error&) {}
  try {
    std::string s = "I:";
    for (auto v : o.attr_ints(name)) s += std::to_string(v) + ",";
    return s;
  } catch (const sb::Error&) {}
  try {
    std::string s = "U:";
    for (auto v : o.attr_uints(name)) s += std::to_string(v) + ",";
    return s;
  } catch (const sb::Error&) {}
  try {
    std::string s = "D:";
    for (auto v : o.attr_doubles(name)) s += hex_bits(v) + ",";
    return s;
  } catch (const sb::Error&) {}
  return "?unreadable";
}

template <class T>
std::string raw_bytes(const sb::h5::Dataset& d) {
  const std::vector<T> v = d.read<T>();
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// path → content of every attribute ("/path@name") and dataset in the group, recursively.
inline void collect_content(const sb::h5::Group& g, std::map<std::string, std::string>& out) {
  const std::string base = g.path() == "/" ? "" : g.path();
  for (const std::string& a : g.attr_names()) {
    if (g.path() == "/" && (a == "host" || a.rfind("time_", 0) == 0)) continue;
    out[base + "@" + a] = attribute_text(g, a);
  }
  for (const std::string& name : g.names()) {
    const std::string path = base + "/" + name;
    if (g.is_group(name)) {
      collect_content(g.group(name), out);
      continue;
    }
    if (path.rfind("/timing/", 0) == 0) continue;
    const sb::h5::Dataset d = g.dataset(name);
    std::string content = std::string(sb::dtype_name(d.dtype())) + sb::h5::dims_string(d.shape()) + ":";
    content += sb::h5::visit_element(d.dtype(), [&](auto zero) { return raw_bytes<decltype(zero)>(d); });
    out[path] = content;
    for (const std::string& a : d.attr_names()) out[path + "@" + a] = attribute_text(d, a);
  }
}

// A copy of the run file `source` at `path`, with its store folder copied beside it (so that the
// copy names the same store files under its own name).
inline void copy_run(const std::string& source, const std::string& path, const std::vector<char>* bytes = nullptr) {
  if (bytes != nullptr) write_bytes(path, *bytes);
  else fs::copy_file(source, path, fs::copy_options::overwrite_existing);
  const std::string store = sb::run::store_dir(path);
  fs::remove_all(store);
  if (fs::exists(sb::run::store_dir(source))) fs::copy(sb::run::store_dir(source), store);
}

// "" when the two run files hold the same content, else the first difference.
inline std::string content_difference(const std::string& a, const std::string& b) {
  std::map<std::string, std::string> ca, cb;
  collect_content(sb::h5::File::open(a), ca);
  collect_content(sb::h5::File::open(b), cb);
  for (const auto& [key, value] : ca) {
    const auto it = cb.find(key);
    if (it == cb.end()) return key + " is only in " + a;
    if (it->second != value) return key + " differs";
  }
  for (const auto& [key, value] : cb) {
    if (ca.find(key) == ca.end()) return key + " is only in " + b;
  }
  return "";
}

}  // namespace sbt
