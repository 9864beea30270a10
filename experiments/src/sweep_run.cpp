// Running a sweep's cells (sweep.hpp): each is a `samebits train … --resume` process (under
// mpirun for ranks > 0) with its output in OUT/logs/<cell>.log; finished runs are skipped, the
// rest trained `jobs` at a time; SIGINT/SIGTERM reach the running cells, which checkpoint. Also
// the plotting step (python3 -m samebits.analysis.report). Launches only: no arithmetic here.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "samebits/cli/sweep.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

volatile std::sig_atomic_t g_sweep_signal = 0;
extern "C" void on_sweep_signal(int signal) { g_sweep_signal = signal; }

// SIGINT/SIGTERM recorded while cells run (and passed on to them by run_cells); restored after.
class SweepSignals {
 public:
  SweepSignals() {
    g_sweep_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_sweep_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SweepSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SweepSignals(const SweepSignals&) = delete;
  SweepSignals& operator=(const SweepSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The first executable called `name` on PATH ("" when none); a name with a '/' is itself.
std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return fs::exists(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

std::string quoted(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t'\"$\\;&|<>()*?") == std::string::npos;
    s += (s.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return s;
}

// Starts argv[0] (searched on PATH) in its own process group with stdout and stderr appended to
// `log_path`, `env` set; the child gets SIGTERM if the sweep dies. Returns its pid.
pid_t spawn(const std::vector<std::string>& argv, const KeyValues& env, const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  SB_CHECK(fd >= 0, "cannot open the log file ", log_path, ": ", std::strerror(errno));
  const std::string header = "# " + quoted(argv) + "\n";
  SB_CHECK(::write(fd, header.data(), header.size()) == ssize_t(header.size()), "cannot write ", log_path);
  std::vector<std::string> store = argv;
  std::vector<char*> args;
  for (std::string& a : store) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  SB_CHECK(pid >= 0, "fork failed: ", std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);  // a terminal's Ctrl-C reaches the sweep alone, which passes it on once
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execvp(args[0], args.data());
    const std::string msg = "cannot start " + store[0] + ": " + std::strerror(errno) + "\n";
    if (::write(2, msg.data(), msg.size()) < 0) ::_exit(127);
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// "" when the run file at `path` is a finished run of `cell`, "train" when it must be (re)started
// or resumed, else why it cannot be used.
std::string run_file_state(const SweepCell& cell) {
  if (!fs::exists(cell.run_path)) return "train";
  try {
    const run::RunReader r = run::RunReader::open(cell.run_path);
    if (r.info().status != run::Status::finished || r.steps_recorded() != cell.config.train.steps) return "train";
    if (r.info().experiment_id != cell.experiment_id) {
      return cell.run_path + " is a finished run of experiment " + r.info().experiment_id + " but cell " + cell.name +
             " is experiment " + cell.experiment_id + " (the sweep file changed): delete it, or use another --out";
    }
    return "";
  } catch (const Error&) {
    return "train";  // damaged or never committed: samebits train --resume decides
  }
}

// The newest "step N/M …" progress line of a cell's log ("" when none yet).
std::string last_step_line(const std::string& log_path) {
  std::ifstream in(log_path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in.tellg();
  if (!in || size <= 0) return "";
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  in.seekg(from);
  std::string tail(static_cast<std::size_t>(size - from), '\0');
  in.read(tail.data(), std::streamsize(tail.size()));
  std::size_t at = tail.rfind("\nstep ");
  if (at == std::string::npos) return "";
  const std::size_t end = tail.find('\n', at + 1);
  return end == std::string::npos ? "" : tail.substr(at + 1, end - at - 1);
}

// The fraction of a cell's steps done by its log's newest progress line ("step 20/60 …"); 0 when
// there is none yet.
double step_fraction(const std::string& line) {
  long long step = 0, total = 0;
  if (std::sscanf(line.c_str(), "step %lld/%lld", &step, &total) != 2 || total <= 0) return 0;
  return std::clamp(double(step) / double(total), 0.0, 1.0);
}

// "; sweep ETA 1:40" from the time spent and the fraction of the cells' steps done.
std::string sweep_eta(double elapsed, double fraction) {
  if (fraction <= 0) return "";
  return "; sweep ETA " + duration_text(elapsed * (1 - fraction) / fraction);
}

}  // namespace

std::vector<std::string> cell_command(const SweepSpec& spec, const SweepCell& cell, const std::string& self_binary) {
  std::vector<std::string> argv;
  if (cell.ranks > 0) {
    argv = {"mpirun", "--oversubscribe", "--bind-to", "none"};
    if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
    argv.insert(argv.end(), {"-np", std::to_string(cell.ranks)});
  }
  argv.push_back(cell.binary.empty() ? self_binary : cell.binary);
  argv.push_back("train");
  if (!spec.base.empty()) argv.push_back(spec.base);
  argv.insert(argv.end(), cell.overrides.begin(), cell.overrides.end());
  argv.push_back("--resume");
  if (cell.micro_leaves > 0) argv.insert(argv.end(), {"--micro-leaves", std::to_string(cell.micro_leaves)});
  return argv;
}

std::vector<CellRun> run_cells(const SweepSpec& spec, const SweepOptions& options, std::ostream& log) {
  fs::create_directories(fs::path(spec.out) / "runs");
  fs::create_directories(fs::path(spec.out) / "logs");
  std::vector<CellRun> runs(spec.cells.size());
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < spec.cells.size(); ++i) {
    const SweepCell& cell = spec.cells[i];
    runs[i].log = (fs::path(spec.out) / "logs" / (cell.name + ".log")).string();
    const std::string state = run_file_state(cell);
    if (state.empty()) {
      runs[i].state = "skipped";
      log << "  " << cell.name << ": finished earlier (" << cell.run_path << ")\n";
    } else if (state != "train") {
      runs[i].state = "failed";
      runs[i].message = state;
      log << "  " << cell.name << ": " << state << "\n";
    } else if (cell.ranks > 0 && find_on_path("mpirun").empty()) {
      runs[i].state = "failed";
      runs[i].message = "ranks = " + std::to_string(cell.ranks) +
                        " needs mpirun, which is not on PATH (scripts/setup installs openmpi-bin)";
      log << "  " << cell.name << ": " << runs[i].message << "\n";
    } else {
      pending.push_back(i);
    }
  }
  log.flush();

  const SweepSignals signals;
  using Clock = std::chrono::steady_clock;
  std::map<pid_t, std::pair<std::size_t, Clock::time_point>> running;
  std::size_t next = 0, done = 0;
  bool forwarded = false;  // a SIGINT/SIGTERM passed on to the running cells
  const int jobs = std::max(1, options.jobs);
  const Clock::time_point sweep_started = Clock::now();
  // The sweep's progress: finished cells count whole, running ones by their newest step line.
  const auto progress = [&](const std::map<pid_t, std::pair<std::size_t, Clock::time_point>>& cells) {
    double steps = double(done);
    for (const auto& [child, cell] : cells) steps += step_fraction(last_step_line(runs[cell.first].log));
    return pending.empty() ? 1.0 : steps / double(pending.size());
  };
  while (next < pending.size() || !running.empty()) {
    while (g_sweep_signal == 0 && next < pending.size() && int(running.size()) < jobs) {
      const std::size_t i = pending[next++];
      const SweepCell& cell = spec.cells[i];
      log << "  [" << (done + running.size() + 1) << "/" << pending.size() << "] " << cell.name << ": training ("
          << cell.describe() << "; log " << runs[i].log << ")\n";
      log.flush();
      const pid_t pid = spawn(cell_command(spec, cell, options.self_binary), cell.env, runs[i].log);
      running[pid] = {i, Clock::now()};
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);  // 0 while every cell still runs
    if (g_sweep_signal != 0 && !forwarded) {
      for (const auto& [child, _] : running) ::kill(child, g_sweep_signal);
      forwarded = true;
    }
    if (pid <= 0) {
      if (options.live) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - sweep_started).count();
        std::string line = "  [" + std::to_string(done) + "/" + std::to_string(pending.size()) + " cells" +
                           sweep_eta(elapsed, progress(running)) + "]";
        for (const auto& [child, cell] : running) {
          const std::string step = last_step_line(runs[cell.first].log);
          line += " " + spec.cells[cell.first].name + ": " + (step.empty() ? "starting" : step);
        }
        log << "\r" << line.substr(0, 150) << "\033[K";
        log.flush();
      }
      ::usleep(200000);  // returns early on a signal
      continue;
    }
    if (options.live) log << "\r\033[K";
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const auto [i, started] = it->second;
    running.erase(it);
    ++done;
    CellRun& r = runs[i];
    r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0) {
      r.state = "trained";
    } else if (g_sweep_signal != 0) {
      r.state = "interrupted";
    } else {
      r.state = "failed";
      r.message = "samebits train exited with " + std::to_string(code) + " (see " + r.log + ")";
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - sweep_started).count();
    log << "  " << spec.cells[i].name << ": " << r.state << " in " << int(r.seconds + 0.5) << " s"
        << (r.message.empty() ? "" : ": " + r.message) << " (" << done << "/" << pending.size() << " cells"
        << (done < pending.size() ? sweep_eta(elapsed, progress(running)) : "") << ")\n";
    log.flush();
  }
  for (std::size_t k = next; k < pending.size(); ++k) runs[pending[k]].state = "interrupted";
  return runs;
}

std::vector<std::string> draw_plots(const SweepSpec& spec, const std::string& self_binary, std::string& note) {
  std::string package;
  if (const char* env = std::getenv("SAMEBITS_PYTHONPATH")) package = env;
  for (fs::path dir : {fs::path(self_binary).parent_path(), fs::current_path()}) {
    for (; package.empty() && !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (fs::exists(dir / "python" / "samebits" / "analysis" / "report.py")) package = (dir / "python").string();
    }
  }
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : find_on_path("python3");
  if (package.empty() || python.empty()) {
    note = "plots not drawn: " +
           std::string(package.empty() ? "python/samebits/analysis not found (set SAMEBITS_PYTHONPATH)" : "no python3");
    return {};
  }
  const std::string log_path = (fs::path(spec.out) / "logs" / "plots.log").string();
  const pid_t pid = spawn({python, "-m", "samebits.analysis.report", spec.out},
                          {{"PYTHONPATH", package}, {"MPLBACKEND", "Agg"}, {"PYTHONDONTWRITEBYTECODE", "1"}}, log_path);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    note = "plots not drawn: python3 -m samebits.analysis.report failed (" + log_path +
           "; it needs python3-h5py and python3-matplotlib, which scripts/setup installs)";
    return {};
  }
  std::vector<std::string> pngs;
  const fs::path dir = fs::path(spec.out) / "plots";
  for (const char* name : {"loss.png", "loss_gap.png", "rel_l2.png", "first_divergence.png", "noise_scale.png"}) {
    if (fs::exists(dir / name)) pngs.push_back(name);
  }
  return pngs;
}

}  // namespace sb::cli
