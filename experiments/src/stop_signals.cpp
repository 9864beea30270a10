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

#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

constexpr double kGraceFloorSeconds = 10;

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

StopSignals::StopSignals(std::function<bool(const std::string& why)> on_stuck) : on_stuck_(std::move(on_stuck)) {
  g_signal.store(0);
  if (on_stuck_) {
    SB_CHECK(::pipe2(wake_, O_CLOEXEC) == 0, "cannot make the stop watchdog's pipe: errno ", errno);
    g_wake.store(wake_[1]);
    watchdog_ = std::thread([this] { watch(); });
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
  const char byte = 'e';
  (void)!::write(wake_[1], &byte, 1);
  watchdog_.join();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

int StopSignals::received() const { return g_signal.load(); }

void StopSignals::took(double seconds) {
  double longest = longest_.load();
  while (seconds > longest && !longest_.compare_exchange_weak(longest, seconds)) {}
}

double StopSignals::grace_seconds() const { return kGraceFloorSeconds + 2 * longest_.load(); }

void StopSignals::watch() {
  if (wait_byte(wake_[0], -1) != 's') return;
  const double grace = grace_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  while (true) {  // a second signal does not move the deadline
    const auto rest =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (rest.count() <= 0) break;
    if (wait_byte(wake_[0], static_cast<int>(rest.count())) == 'e') return;
  }
  char why[160];
  std::snprintf(why, sizeof why,
                "interrupted by %s and not at a step boundary %.1f s later (a rank blocked in a "
                "collective: a peer or its host lost?)",
                signal_name(received()), grace);
  while (!on_stuck_(why))
    if (wait_byte(wake_[0], 100) == 'e') return;
  std::fprintf(stderr, "samebits: %s; this rank ends (exit 2)\n", why);
  std::fflush(nullptr);
  ::_exit(2);
}

}  // namespace sb::cli
