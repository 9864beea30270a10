// TpNsGroup and the shard optimizer (parallel/tp_ns_group.hpp). Determinism: sum_exact is an
// integer SUM (order-free); sum_gram is the float SUM of the communicator (distributed) or the
// exact all-reduce rounded once (distributed_exact, order-free); every rank gets the same sum.
#include "samebits/core/parallel/tp_ns_group.hpp"

#include <vector>

#include "samebits/core/parallel/exact_allreduce.hpp"
#include "samebits/det/error.hpp"

namespace sb {

TpNsGroup::TpNsGroup(Communicator& tp, Backend& backend, bool exact) : comm_(tp), backend_(backend), exact_(exact) {}

TpNsGroup::~TpNsGroup() = default;

det::ExactSum TpNsGroup::sum_exact(const det::ExactSum& s) {
  std::vector<int64_t> words(det::ExactSum::kWords);
  s.to_words(words.data());
  comm_.allreduce_sum_i64(words.data(), words.size());
  return det::ExactSum::from_words(words.data());
}

void TpNsGroup::sum_gram(float* a, size_t n) {
  if (!exact_) {
    comm_.allreduce_sum_f32(a, n);
    return;
  }
  std::unique_ptr<GradAccumulator>& acc = sums_[n];
  if (!acc) acc = backend_.make_accumulator(n);
  acc->clear();
  acc->add(a);
  uint32_t status = acc->status();
  comm_.allreduce_or_u32(&status, 1);
  exact_allreduce(*acc, comm_, static_cast<uint64_t>(comm_.size()), status);
  acc->round(a, 1.0f);  // the exact sum rounded once (÷ 1 is exact)
}

std::vector<MatrixShard> tp_matrix_shards(const TpLayout& layout, const std::shared_ptr<NsGroup>& group) {
  std::vector<MatrixShard> shards(layout.local.size());
  for (size_t t = 0; t < shards.size(); ++t) {
    const ParamView& full = layout.full[t];
    const TpSplit& s = layout.splits[t];
    if (!s.sharded || full.kind != ParamKind::matrix) continue;
    SB_CHECK(full.shape.size() == 2, "tensor-parallel Newton–Schulz: matrix ", full.name, " of shape ",
             shape_string(full.shape), " has not two dimensions");
    const int64_t rows = full.shape[0], cols = full.shape[1];
    // (outer, size·part, inner): the rows are split when a block is whole rows (inner = cols),
    // the columns when blocks of columns of every row are (inner = 1, outer = rows · blocks a row:
    // grouped-query attention's attn.proj.w holds n_head/n_kv_head of them).
    const bool by_rows = s.inner == cols;
    SB_CHECK(by_rows || (s.outer % rows == 0 && s.inner == 1), "tensor-parallel Newton–Schulz: ", full.name,
             " is split neither by rows nor by columns");
    shards[t] = {group, by_rows ? Trans::yes : Trans::no, rows, cols};
  }
  return shards;
}

std::unique_ptr<Optimizer> make_tp_shard_optimizer(const OptimConfig& config, TensorParallel& tp, Backend& backend,
                                                   Precision precision) {
  const TpLayout& layout = tp.layout();
  if (!optimizer_needs(config.name).whole_matrices) return make_optimizer(config, layout.local, backend, precision);
  auto muon = std::make_unique<Muon>(layout.local, backend, precision, muon_options(config));
  const auto group = std::make_shared<TpNsGroup>(tp.tp(), backend, config.tp_mode == TpMode::distributed_exact);
  muon->set_shards(tp_matrix_shards(layout, group));
  return muon;
}

}  // namespace sb
