// train_run.hpp: the `samebits train` loop over a RunSession, on one process or every rank of
// an MPI job (rank 0 writes), and the progress display. A resume imports the newest good
// checkpoint, so every recorded bit equals the uninterrupted run's (the trainer's contract),
// whatever the moment the earlier session died.
#include "samebits/cli/train_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "run_session.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {

TrainRunResult train_run(const Config& config, const TrainRunOptions& options, std::ostream& log) {
  RunSession session(config, options, log);
  try {
    if (!session.resume()) return session.result();
    while (!session.trainer_finished()) {
      const StopRequest request = session.agree_stop();
      if (request != StopRequest::none) return session.stop(request);
      if (session.step() == config.train.steps) break;
      session.checkpoint();
    }
    return session.finish();
  } catch (const Error& e) {
    throw Error(session.fail(e.what()));
  }
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else std::snprintf(text, sizeof text, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return text;
}

bool progress_bar_wanted(Progress progress) {
  return progress == Progress::on || (progress == Progress::automatic && ::isatty(STDERR_FILENO) == 1);
}

ProgressDisplay::ProgressDisplay(std::ostream& out, bool bar, int64_t every, int64_t first, int64_t total,
                                 const char* what)
    : out_(out), bar_(bar), every_(std::max<int64_t>(1, every)), first_(first), total_(total), what_(what) {}

void ProgressDisplay::update(int64_t step, int64_t tokens, double seconds, float loss, float val_loss) {
  seconds_ += seconds;
  tokens_ += tokens;
  const double rate = seconds_ > 0 ? double(tokens_) / seconds_ : 0;
  const double eta = step > first_ ? seconds_ / double(step - first_) * double(total_ - step) : NAN;
  char val[32] = "";
  if (!std::isnan(val_loss)) std::snprintf(val, sizeof val, "  val %.4f", double(val_loss));
  char line[256];
  if (bar_) {
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && step < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    drawn_ = true;
    constexpr int kWidth = 24;
    const int filled = total_ > 0 ? int(kWidth * step / total_) : kWidth;
    const std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '.');
    std::snprintf(line, sizeof line, "\r%s %lld/%lld [%s] loss %.4f%s  %.0f tok/s  ETA %s ", what_, (long long)step,
                  (long long)total_, bar.c_str(), double(loss), val, rate, duration_text(eta).c_str());
    out_ << line << std::flush;
    return;
  }
  if (step % every_ != 0 && step != total_) return;
  std::snprintf(line, sizeof line, "%s %lld/%lld  loss %.6f%s  %.0f tok/s  elapsed %s  ETA %s\n", what_,
                (long long)step, (long long)total_, double(loss), val, rate, duration_text(seconds_).c_str(),
                duration_text(eta).c_str());
  out_ << line << std::flush;
}

void ProgressDisplay::finish() {
  if (bar_ && drawn_) out_ << "\n" << std::flush;
}

}  // namespace sb::cli
