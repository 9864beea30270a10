// stop_signals.hpp: the handlers set a flag and wake the watchdog through a pipe (both
// async-signal-safe); the watchdog gives the loop grace_seconds() to end the session, then marks the
// run file through on_stuck and exits 2. No numerics here.
#include "samebits/cli/stop_signals.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>

#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_wake{-1};  // the write end of the live watchdog's pipe, or -1
struct sigaction g_old_int {};
struct sigaction g_old_term {};

extern "C" void on_stop_signal(int signal) {
  g_signal.store(signal);
  const int fd = g_wake.load();
  const char byte = 's';
  if (fd >= 0) (void)!::write(fd, &byte, 1);
}

const char* signal_name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

// Waits up to `ms` (< 0: forever) for a byte on `fd`: the byte, or 0 at the timeout.
char wait_byte(int fd, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    int left = -1;
    if (ms >= 0) {
      const auto rest =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      left = static_cast<int>(std::max<int64_t>(0, rest.count()));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    char byte = 0;
    if (::read(fd, &byte, 1) == 1) return byte;
  }
}

}  // namespace

// The watchdog's pipe carries 's' (a signal, from the handler), 'e' (destroyed without a signal:
// stop) and 'o' (destroyed after a signal: the session is over).
struct StopSignals::Watch {
  std::function<bool(const std::string&)> on_stuck;
  double floor = 10;  // seconds
  std::atomic<double> longest{0};
  int wake[2] = {-1, -1};
  std::mutex phase;   // held by the watchdog around on_stuck, and to end the session
  bool over = false;  // the session ended after a signal: on_stuck's captures are gone
  double grace() const { return floor + 2 * longest.load(); }
};

StopSignals::StopSignals(std::function<bool(const std::string& why)> on_stuck, double grace_floor)
    : watch_(std::make_shared<Watch>()) {
  g_signal.store(0);
  watch_->floor = grace_floor;
  if (on_stuck) {
    watch_->on_stuck = std::move(on_stuck);
    SB_CHECK(::pipe2(watch_->wake, O_CLOEXEC) == 0, "cannot make the stop watchdog's pipe: errno ", errno);
    g_wake.store(watch_->wake[1]);
    watchdog_ = std::thread([w = watch_] { watch(w); });
  }
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  if (!watchdog_.joinable()) return;
  g_wake.store(-1);
  if (g_signal.load() == 0) {
    const char byte = 'e';
    (void)!::write(watch_->wake[1], &byte, 1);
    watchdog_.join();
    ::close(watch_->wake[0]);
    ::close(watch_->wake[1]);
    return;
  }
  {
    const std::lock_guard lock(watch_->phase);
    watch_->over = true;
  }
  const char byte = 'o';
  (void)!::write(watch_->wake[1], &byte, 1);
  watchdog_.detach();  // it ends the process should it outlive the session (its pipe closes at exit)
}

int StopSignals::received() const { return g_signal.load(); }

void StopSignals::took(double seconds) {
  double longest = watch_->longest.load();
  while (seconds > longest && !watch_->longest.compare_exchange_weak(longest, seconds)) {}
}

double StopSignals::grace_seconds() const { return watch_->grace(); }

void StopSignals::watch(const std::shared_ptr<Watch>& w) {
  const int fd = w->wake[0];
  if (wait_byte(fd, -1) != 's') return;
  const double grace = w->grace();
  const auto now = [] { return std::chrono::steady_clock::now(); };
  auto deadline = now() + std::chrono::duration<double>(grace);
  while (true) {  // a second signal does not move the deadline; the session's end gives it the floor
    const auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now());
    if (rest.count() <= 0) break;
    const char byte = wait_byte(fd, static_cast<int>(rest.count()));
    if (byte == 'e') return;
    if (byte == 'o') deadline = std::max(deadline, now() + std::chrono::duration<double>(w->floor));
  }
  char why[200];
  const auto end = [&] {
    std::fprintf(stderr, "samebits: %s; this rank ends (exit 2)\n", why);
    std::fflush(nullptr);
    ::_exit(2);
  };
  const auto end_over = [&] {
    std::snprintf(why, sizeof why,
                  "ended its session after %s but still runs %.1f s later (a peer lost after the ranks "
                  "agreed to stop?)",
                  signal_name(g_signal.load()), grace);
    end();
  };
  std::unique_lock lock(w->phase);
  if (w->over) end_over();
  std::snprintf(why, sizeof why,
                "interrupted by %s and not at a step boundary %.1f s later (a rank blocked in a "
                "collective: a peer or its host lost?)",
                signal_name(g_signal.load()), grace);
  // The writer may stay busy (a pipeline checkpoint fetching from a lost stage): after another
  // grace the rank ends unmarked; the run file keeps its last commit, which a resume continues.
  const auto give_up = now() + std::chrono::duration<double>(grace);
  while (!w->on_stuck(why)) {
    lock.unlock();
    if (wait_byte(fd, 100) == 'e') return;
    lock.lock();
    if (w->over) end_over();
    if (now() >= give_up) {
      std::snprintf(why, sizeof why,
                    "interrupted by %s and not at a step boundary %.1f s later, its run file writer busy %.1f s "
                    "more (a checkpoint waiting on a lost peer?): the run file is left at its last commit",
                    signal_name(g_signal.load()), grace, grace);
      end();
    }
  }
  end();
}

}  // namespace sb::cli
