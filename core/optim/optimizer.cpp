// make_optimizer (optimizer.hpp): one config word chooses Muon (+ AdamW for the non-matrix
// tensors) or AdamW for everything. No arithmetic here.
#include "samebits/core/optim/optimizer.hpp"

#include "samebits/core/optim/adamw.hpp"
#include "samebits/core/optim/muon.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

using Params = std::vector<ParamView>;

std::unique_ptr<Optimizer> make_muon(const OptimConfig& c, const Params& p, Backend& be, Precision precision) {
  return std::make_unique<Muon>(p, be, precision, muon_options(c));
}
std::unique_ptr<Optimizer> make_adamw(const OptimConfig& c, const Params& p, Backend& be, Precision) {
  return std::make_unique<AdamW>(p, be, adamw_options(c));
}
std::vector<double> muon_cost(const OptimConfig& c, const Params& p) { return muon_update_cost(muon_options(c), p); }
std::vector<double> adamw_cost(const OptimConfig&, const Params& p) { return adamw_update_cost(p); }

// One row per optim.name: what it needs, how it is made, what its update costs.
struct Registration {
  OptimizerName name;
  OptimizerNeeds needs;
  std::unique_ptr<Optimizer> (*make)(const OptimConfig&, const Params&, Backend&, Precision);
  std::vector<double> (*cost)(const OptimConfig&, const Params&);
};
const Registration kOptimizers[] = {
    {OptimizerName::muon, {true, true}, make_muon, muon_cost},  // Muon (Keller Jordan 2024) + AdamW
    {OptimizerName::normuon, {true, true}, make_muon, muon_cost},
    {OptimizerName::adamw, {false, false}, make_adamw, adamw_cost},  // AdamW (Loshchilov & Hutter)
};

const Registration& registration(OptimizerName name) {
  for (const Registration& r : kOptimizers)
    if (r.name == name) return r;
  SB_FAIL("unknown optimizer ", static_cast<int>(name), "; expected optim.name=muon, normuon or adamw");
}

}  // namespace

const OptimizerNeeds& optimizer_needs(OptimizerName name) { return registration(name).needs; }

bool needs_whole_tensor(const OptimConfig& config, const ParamView& p) {
  return optimizer_needs(config.name).whole_matrices && p.kind == ParamKind::matrix;
}

double adamw_peak_lr(const OptimConfig& config) {
  return optimizer_needs(config.name).adamw_group ? config.adam_lr : config.lr;
}

std::string_view update_name(const OptimConfig& config, const ParamView& p) {
  return needs_whole_tensor(config, p) ? config_name(config.name) : std::string_view("adamw");
}

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const std::vector<ParamView>& params,
                                          Backend& backend, Precision precision) {
  return registration(config.name).make(config, params, backend, precision);
}

std::vector<double> update_cost(const OptimConfig& config, const std::vector<ParamView>& params) {
  return registration(config.name).cost(config, params);
}

}  // namespace sb
