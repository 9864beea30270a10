// divergence.hpp: AgreementProbe — two parameter states forwarded over the same fixed batch (the
// first sequences of the experiment's validation set), argmax disagreement, the Pearson
// correlation of the logits and, for a Mixture-of-Experts model, the tokens routed differently. Determinism: canonical
// kernels on the CPU backend, one model per state, positions in ascending order, fp64 co-moments updated sequentially
// (Welford).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "samebits/cli/divergence.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/core/ops/moe_router.hpp"
#include "samebits/data/sampler.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/exact_sum.hpp"

namespace sb::cli {
namespace {

// Index of the largest value (ties and NaNs: the lowest index wins).  row: (vocab).
int64_t argmax(const float* row, int64_t vocab) {
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; ++v) {
    if (row[v] > row[best]) best = v;
  }
  return best;
}

}  // namespace

struct AgreementProbe::Impl {
  Config config;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<GPT> model_a, model_b;  // leaf_size 1: one sequence per forward
  std::unique_ptr<data::TokenSource> source;
  std::unique_ptr<data::ValidationSet> batch;
};

AgreementProbe::AgreementProbe(const Config& config, int64_t sequences) : impl_(std::make_unique<Impl>()) {
  Impl& p = *impl_;
  p.config = config;
  const int64_t n = sequences > 0 ? sequences : config.train.eval_leaves * config.data.leaf_size;
  p.backend = make_cpu_backend(Numerics::deterministic(config.train.precision));
  p.model_a = std::make_unique<GPT>(config.model, 1, *p.backend);
  p.model_b = std::make_unique<GPT>(config.model, 1, *p.backend);
  p.source = data::open_source(to_data_config(config), data::Split::validation, io::isolated_hdf5_decoder());
  p.batch = std::make_unique<data::ValidationSet>(*p.source, config.model.seq_len, uint64_t(n));
}

AgreementProbe::~AgreementProbe() = default;

int64_t AgreementProbe::sequences() const { return int64_t(impl_->batch->size()); }

Agreement AgreementProbe::compare(std::span<const float> a, std::span<const float> b, int64_t step,
                                  std::string source) {
  Impl& p = *impl_;
  const size_t flat = p.model_a->flat_size();
  SB_CHECK(a.size() == flat && b.size() == flat, "prediction agreement: states of ", a.size(), " and ", b.size(),
           " parameters, but this experiment's model has a flat buffer of ", flat);
  p.backend->copy_from_host(p.model_a->weights().data(), a.data(), flat * sizeof(float));
  p.backend->copy_from_host(p.model_b->weights().data(), b.data(), flat * sizeof(float));

  const int T = p.config.model.seq_len;
  const int64_t V = p.config.model.vocab;
  std::vector<int32_t> tokens(size_t(T) + 1);                   // (seq_len + 1)
  std::vector<float> la(size_t(T) * size_t(V)), lb(la.size());  // (seq_len, vocab) host logits
  det::ExactSum loss_a, loss_b;
  Agreement r;
  r.step = step;
  r.source = std::move(source);
  bool equal = true;
  double n = 0, mean_a = 0, mean_b = 0, m2_a = 0, m2_b = 0, co = 0;  // Welford co-moments
  for (uint64_t s = 0; s < p.batch->size(); ++s) {
    p.batch->sequence(s, tokens.data());
    p.model_a->forward(tokens.data());
    p.model_b->forward(tokens.data());
    loss_a.merge(p.model_a->loss_sum());
    loss_b.merge(p.model_b->loss_sum());
    p.backend->copy_to_host(la.data(), p.model_a->logits(), la.size() * sizeof(float));
    p.backend->copy_to_host(lb.data(), p.model_b->logits(), lb.size() * sizeof(float));
    equal = equal && std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0;
    const size_t k = size_t(p.config.model.moe_top_k);
    for (int l = 0; l < p.config.model.n_layer; ++l) {
      if (!p.config.model.moe_block(l)) continue;
      const std::vector<int32_t>&ca = p.model_a->moe_choices(l), &cb = p.model_b->moe_choices(l);
      r.routes_differing += ops::moe_routes_differing(ca.data(), cb.data(), int64_t(ca.size() / k), int(k));
      r.routes += int64_t(ca.size() / k);
    }
    for (int t = 0; t < T; ++t) {
      const float* ra = la.data() + size_t(t) * size_t(V);
      const float* rb = lb.data() + size_t(t) * size_t(V);
      if (argmax(ra, V) != argmax(rb, V)) ++r.disagreeing;
      for (int64_t v = 0; v < V; ++v) {
        const double x = ra[v], y = rb[v];
        n += 1;
        const double dx = x - mean_a;
        mean_a += dx / n;
        const double dy = y - mean_b;
        mean_b += dy / n;
        m2_a += dx * (x - mean_a);
        m2_b += dy * (y - mean_b);
        co += dx * (y - mean_b);
      }
    }
  }
  r.positions = int64_t(p.batch->size()) * T;
  r.disagreement = r.positions ? double(r.disagreeing) / double(r.positions) : 0.0;
  r.route_disagreement = r.routes ? double(r.routes_differing) / double(r.routes) : 0.0;
  if (equal) r.logit_correlation = 1.0;
  else if (m2_a > 0 && m2_b > 0) r.logit_correlation = co / (std::sqrt(m2_a) * std::sqrt(m2_b));
  else r.logit_correlation = std::numeric_limits<double>::quiet_NaN();
  r.loss_a = loss_a.to_f64() / double(r.positions);
  r.loss_b = loss_b.to_f64() / double(r.positions);
  return r;
}

}  // namespace sb::cli
