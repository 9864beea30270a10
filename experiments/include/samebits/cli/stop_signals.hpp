// SIGINT and SIGTERM while a run trains: a stop the loop takes at its next step boundary (a
// checkpoint, the run file marked), and for a rank of a world a watchdog for when it cannot: a main
// thread blocked in a collective whose peer (or its host) is lost. No numerics here.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace sb::cli {

class StopSignals {
 public:
  // Installs the handlers (the previous ones come back at destruction). With `on_stuck`, a watchdog
  // thread: when the object still lives grace_seconds() after a signal, it calls on_stuck(why) —
  // every 0.1 s until it returns true or the object is destroyed — and then ends the process with
  // exit code 2 (_exit: nothing else runs). on_stuck marks the run file; it must not wait for the
  // main thread (which may never return from its collective): false means "busy, try again".
  // Destroyed after a signal (the session ended at a step boundary), the watchdog lives on: if the
  // process still runs 10 s (at least) after the signal's grace — a peer lost after the ranks
  // agreed to stop leaves MPI's finalisation waiting — it ends it with exit code 2, without on_stuck.
  // `grace_floor` (seconds, 10 in samebits) is the grace's floor, and the wait after a session's end.
  explicit StopSignals(std::function<bool(const std::string& why)> on_stuck = nullptr, double grace_floor = 10);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  int received() const;  // 0, SIGINT or SIGTERM: the last signal received
  // A step (with its record and checkpoint) took `seconds`: the grace grows with the longest.
  void took(double seconds);
  // How long a signal waits for the loop to end the session: the floor + twice the longest step.
  double grace_seconds() const;

 private:
  struct Watch;  // what the watchdog thread reads; it may outlive this object
  static void watch(const std::shared_ptr<Watch>& w);

  std::shared_ptr<Watch> watch_;
  std::thread watchdog_;
};

}  // namespace sb::cli
