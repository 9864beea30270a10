// The RunHeader a one-process run of `config` on `trainer` records (what samebits train builds),
// for tests that drive RunWriter directly.
#pragma once
#include "samebits/core/io/run_file.hpp"

namespace sbt {

inline sb::run::RunHeader run_header(const sb::Config& config, sb::Trainer& trainer) {
  sb::run::RunHeader h;
  h.config_text = sb::to_ini_text(config);
  h.experiment_id = sb::experiment_id(config);
  h.experiment_text = sb::experiment_text(config);
  h.steps = config.train.steps;
  h.tensors = sb::run::tensor_infos(trainer.model().params());
  h.execution.backend = trainer.backend().describe();
  h.execution.communicator = "local";
  h.execution.threads = 1;
  return h;
}

}  // namespace sbt
