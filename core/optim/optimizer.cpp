// make_optimizer (optimizer.hpp): one config word chooses Muon (+ AdamW for the non-matrix
// tensors) or AdamW for everything. No arithmetic here.
#include "samebits/core/optim/optimizer.hpp"

#include "samebits/core/optim/adamw.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/det/error.hpp"

namespace sb {

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const std::vector<ParamView>& params,
                                          Backend& backend, Precision precision) {
  switch (config.name) {
    case OptimizerName::muon:
    case OptimizerName::normuon: return std::make_unique<Muon>(params, backend, precision, muon_options(config));
    case OptimizerName::adamw: return std::make_unique<AdamW>(params, backend, adamw_options(config));
  }
  SB_FAIL("make_optimizer: unknown optimizer ", static_cast<int>(config.name),
          "; expected optim.name=muon, normuon or adamw");
}

std::vector<double> update_cost(const OptimConfig& config, const std::vector<ParamView>& params) {
  return config.muon_family() ? muon_update_cost(muon_options(config), params) : adamw_update_cost(params);
}

}  // namespace sb
