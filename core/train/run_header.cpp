// The one place a RunHeader is built (see run_header.hpp). Not part of any computation.
#include "samebits/core/train/run_header.hpp"

#include <omp.h>

namespace sb {

run::RunHeader run_header(const Config& config, Trainer& trainer) {
  run::RunHeader h;
  h.config_text = to_ini_text(config);
  h.experiment_id = experiment_id(config);
  h.experiment_text = experiment_text(config);
  h.steps = config.train.steps;
  h.tensors = run::tensor_infos(trainer.model().params());
  h.qk_n_head = config.optim.qk_clip > 0.0 ? config.model.n_head : 0;
  h.execution.backend = trainer.backend().describe();
  h.execution.communicator = trainer.communicator().describe();
  h.execution.threads = omp_get_max_threads();
  h.execution.world_size = trainer.communicator().size();
  h.execution.micro_leaves = trainer.options().micro_leaves;
  return h;
}

}  // namespace sb
