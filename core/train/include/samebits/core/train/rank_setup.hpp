// What one rank trains on: the backend of the config's run.backend on the device the launcher's
// plan gives this process, and the plan's communicator (parallel/launch.hpp). Execution only: the
// choice changes no bit of a run (docs/CONTRACT.md). Used by `samebits train` and samebits.Trainer.
#pragma once
#include <memory>

#include "samebits/core/backend.hpp"
#include "samebits/core/config.hpp"
#include "samebits/core/parallel/communicator.hpp"

namespace sb {

// The backend of config's run.backend on device `device` (an error for cuda in a build without it).
std::unique_ptr<Backend> make_backend(const Config& config, int device);

// Destroy the trainer first, then comm, then backend.
struct RankSetup {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Communicator> comm;
};
RankSetup make_rank_setup(const Config& config);

}  // namespace sb
