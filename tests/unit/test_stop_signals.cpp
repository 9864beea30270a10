// The stop watchdog (experiments/src/stop_signals.cpp) with each branch forced, in a forked child
// whose main thread never returns (pause()), so that only the watchdog can end it: a signal while
// the session runs (a rank blocked in a collective) → on_stuck marks the run, exit 2 after the
// grace; its writer busy all along (a pipeline checkpoint fetching from a lost peer) → exit 2
// after a second grace, unmarked; a session ended after the signal with the process still alive (MPI's finalisation
// waiting for a lost peer) → exit 2 without on_stuck; a session ended after the signal in a process
// that then exits, and a session without a signal → the process's own exit code. A short grace
// floor keeps it fast; the lower bounds on the time are the contract (never before the grace).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <string>

#include "samebits/cli/stop_signals.hpp"

namespace {

constexpr double kFloor = 0.3;  // seconds

struct Child {
  int code = -1;       // exit code, or -1 when killed by a signal
  std::string errors;  // what it wrote to stderr
  std::string stuck;   // what its on_stuck received, each call one line
  double seconds = 0;  // from fork to its end
};

// Runs body(stuck_fd) in a forked child with stderr captured; kills it after 30 s (a hang).
Child run_child(const std::function<void(int stuck_fd)>& body) {
  int err[2], stuck[2];
  REQUIRE(::pipe(err) == 0);
  REQUIRE(::pipe(stuck) == 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(err[1], 2);
    ::close(err[0]);
    ::close(stuck[0]);
    body(stuck[1]);
    ::_exit(0);
  }
  ::close(err[1]);
  ::close(stuck[1]);
  Child c;
  int status = 0;
  for (int i = 0; i < 3000 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(10000);
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("the child still ran 30 s later: the watchdog did not end it");
  }
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  char buf[512];
  for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;) c.errors.append(buf, size_t(n));
  for (ssize_t n; (n = ::read(stuck[0], buf, sizeof buf)) > 0;) c.stuck.append(buf, size_t(n));
  ::close(err[0]);
  ::close(stuck[0]);
  return c;
}

// on_stuck that records `why` and reports "busy" `busy` times first.
std::function<bool(const std::string&)> recorder(int fd, int busy) {
  return [fd, busy](const std::string& why) mutable {
    if (busy-- > 0) return false;
    const std::string line = why + "\n";
    (void)!::write(fd, line.data(), line.size());
    return true;
  };
}

}  // namespace

TEST_CASE("a signal while the session runs: on_stuck marks the run, exit 2 after the grace") {
  const Child c = run_child([](int fd) {
    sb::cli::StopSignals s(recorder(fd, 2), kFloor);
    s.took(0.1);  // the grace grows to the floor + twice the longest step
    std::raise(SIGTERM);
    for (;;) ::pause();  // blocked in a collective
  });
  CHECK(c.code == 2);
  CHECK(c.seconds >= kFloor + 0.2);
  CHECK(c.stuck.find("interrupted by SIGTERM and not at a step boundary") == 0);
  CHECK(c.stuck.find('\n') == c.stuck.size() - 1);  // called until it succeeded, then once only
  CHECK(c.errors.find("this rank ends (exit 2)") != std::string::npos);
}

TEST_CASE("a writer that stays busy: exit 2 after a second grace, the run unmarked") {
  const Child c = run_child([](int fd) {
    sb::cli::StopSignals s(recorder(fd, 1 << 30), kFloor);
    std::raise(SIGTERM);
    for (;;) ::pause();  // blocked in a checkpoint that fetches from a lost peer, the writer held
  });
  CHECK(c.code == 2);
  CHECK(c.seconds >= 2 * kFloor);
  CHECK(c.stuck.empty());
  CHECK(c.errors.find("its run file writer busy") != std::string::npos);
  CHECK(c.errors.find("this rank ends (exit 2)") != std::string::npos);
}

TEST_CASE("a session ended after the signal in a process that does not end: exit 2, on_stuck not called") {
  const Child c = run_child([](int fd) {
    {  // a session that ends at the step boundary after the signal
      sb::cli::StopSignals s(recorder(fd, 0), kFloor);
      std::raise(SIGINT);
    }
    for (;;) ::pause();  // MPI's finalisation waiting for a lost peer
  });
  CHECK(c.code == 2);
  CHECK(c.seconds >= kFloor);
  CHECK(c.stuck.empty());
  CHECK(c.errors.find("ended its session after SIGINT but still runs") != std::string::npos);
}

TEST_CASE("a session ended after the signal, then the process exits: its own exit code") {
  const Child c = run_child([](int fd) {
    {
      sb::cli::StopSignals s(recorder(fd, 0), kFloor);
      std::raise(SIGTERM);
    }
    ::_exit(3);
  });
  CHECK(c.code == 3);
  CHECK(c.stuck.empty());
  CHECK(c.errors.empty());
}

TEST_CASE("no signal: the watchdog ends with the session and never calls on_stuck") {
  const Child c = run_child([](int fd) {
    { sb::cli::StopSignals s(recorder(fd, 0), kFloor); }
    ::usleep(int(3 * kFloor * 1e6));  // longer than any grace
    ::_exit(0);
  });
  CHECK(c.code == 0);
  CHECK(c.seconds >= 3 * kFloor);
  CHECK(c.stuck.empty());
  CHECK(c.errors.empty());
}

TEST_CASE("the grace: 10 s floor by default, plus twice the longest step") {
  sb::cli::StopSignals s;
  CHECK(s.grace_seconds() == 10.0);
  s.took(2.5);
  s.took(1.0);
  CHECK(s.grace_seconds() == 15.0);
}
