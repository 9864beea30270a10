// Expert parallelism of a Mixture-of-Experts block (docs/DISTRIBUTED.md §12). A rank's routed rows
// (m.xe: grouped by expert in ascending index, each expert's tokens in position order) go to their
// experts' ranks, one contiguous part per rank; an expert's rank computes each source's rows apart,
// by the GEMMs and activations one process runs on that leaf's rows of that expert, and sends the
// outputs back, where the token's combine runs in ascending expert index as always. The backward
// sends the rows' output gradients the same way; an expert's weight gradient of a source's rows is
// one process's gradient of that leaf, added to the accumulator on its own (the sink) for the other
// sources and kept in the leaf's gradient for this rank's own. No float is combined across ranks.
#include <vector>

#include "gpt_moe.hpp"
#include "samebits/core/trace.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The traced leaf set to a source rank's while its rows are computed here, restored after.
class SourceLeaf {
 public:
  SourceLeaf(Backend& be, int64_t leaf) : tracer_(be.tracer()) {
    if (tracer_ == nullptr) return;
    saved_ = tracer_->leaf();
    tracer_->set_leaf(leaf);
  }
  ~SourceLeaf() {
    if (tracer_ != nullptr) tracer_->set_leaf(saved_);
  }
  SourceLeaf(const SourceLeaf&) = delete;
  SourceLeaf& operator=(const SourceLeaf&) = delete;

 private:
  trace::Recorder* tracer_;
  int64_t saved_ = -1;
};

}  // namespace

void GPT::moe_remote_forward(MoeLayer& m, int64_t layer) {
  const int P = ep_->size(), me = ep_->rank(), El = cfg_.moe_experts / P, S = cfg_.moe_shared_experts;
  const size_t C = size_t(cfg_.n_embd), F = size_t(cfg_.expert_ffn()) / (tp_ != nullptr ? tp_->size() : 1);
  const size_t FC = size_t(cfg_.fc_blocks()) * F;
  const auto first = [&](int e) { return m.first[size_t(S + e)]; };  // routed expert e's first row here
  // To each rank: this leaf (the trace's) and the row counts of its experts; from each: theirs.
  std::vector<int64_t> out(size_t(P) * size_t(El + 1)), in(out.size());
  const int64_t leaf = be_.tracer() != nullptr ? be_.tracer()->leaf() : -1;
  for (int d = 0; d < P; ++d) {
    out[size_t(d) * size_t(El + 1)] = leaf;
    for (int j = 0; j < El; ++j)
      out[size_t(d) * size_t(El + 1) + 1 + size_t(j)] = first(d * El + j + 1) - first(d * El + j);
  }
  ep_->alltoall(out.data(), size_t(El + 1), in.data());
  m.got.assign(size_t(P) * size_t(El), 0), m.source_leaf.assign(size_t(P), -1);
  m.send_rows.assign(size_t(P), 0), m.recv_rows.assign(size_t(P), 0);
  for (int q = 0; q < P; ++q) {
    m.source_leaf[size_t(q)] = in[size_t(q) * size_t(El + 1)];
    m.send_rows[size_t(q)] = size_t(first((q + 1) * El) - first(q * El));
    for (int j = 0; j < El; ++j) {
      m.got[size_t(q) * size_t(El) + size_t(j)] = in[size_t(q) * size_t(El + 1) + 1 + size_t(j)];
      m.recv_rows[size_t(q)] += size_t(m.got[size_t(q) * size_t(El) + size_t(j)]);
    }
  }
  std::vector<size_t> send(static_cast<size_t>(P)), recv(static_cast<size_t>(P));  // floats
  for (int q = 0; q < P; ++q)
    send[size_t(q)] = m.send_rows[size_t(q)] * C, recv[size_t(q)] = m.recv_rows[size_t(q)] * C;
  float *x = m.ep_x.data_as<float>(), *h = m.ep_h.data_as<float>(), *act = m.ep_act.data_as<float>(),
        *y = m.ep_y.data_as<float>();
  const size_t routed = size_t(first(0)) * C;  // the routed rows' start in m.xe and m.y
  ep_->alltoallv(m.xe.data_as<float>() + routed, send.data(), x, recv.data());
  size_t r = 0;
  for (int q = 0; q < P; ++q) {
    const SourceLeaf at(be_, m.source_leaf[size_t(q)]);
    for (int j = 0; j < El; ++j) {
      const auto n = size_t(m.got[size_t(q) * size_t(El) + size_t(j)]);
      if (n > 0) expert_forward(layer, S + me * El + j, int(n), x + r * C, h + r * FC, act + r * F, y + r * C);
      r += n;
    }
  }
  ep_->alltoallv(y, recv.data(), m.y.data_as<float>() + routed, send.data());
}

void GPT::moe_remote_backward(MoeLayer& m, int64_t layer, const float* dy, float* dxe) {
  const int P = ep_->size(), me = ep_->rank(), El = cfg_.moe_experts / P, S = cfg_.moe_shared_experts;
  const size_t C = size_t(cfg_.n_embd), F = size_t(cfg_.expert_ffn()) / (tp_ != nullptr ? tp_->size() : 1);
  const size_t FC = size_t(cfg_.fc_blocks()) * F;
  SB_CHECK(sink_ != nullptr, "expert parallelism: the model has no gradient sink for other ranks' rows");
  const size_t in = size_t(P) * size_t(B_) * size_t(cfg_.seq_len) * size_t(cfg_.moe_top_k);
  float* dyr = ep_scratch_.data_as<float>();
  float *dxr = dyr + in * C, *dh = dxr + in * C, *dact = dh + in * FC;
  std::vector<size_t> send(static_cast<size_t>(P)), recv(static_cast<size_t>(P)),  // floats: the forward's parts
      start(static_cast<size_t>(P) + 1, 0);                                        // each source's first row
  for (int q = 0; q < P; ++q) {
    send[size_t(q)] = m.send_rows[size_t(q)] * C, recv[size_t(q)] = m.recv_rows[size_t(q)] * C;
    start[size_t(q) + 1] = start[size_t(q)] + m.recv_rows[size_t(q)];
  }
  const size_t routed = size_t(m.first[size_t(S)]) * C;
  ep_->alltoallv(dy + routed, send.data(), dyr, recv.data());
  const float *x = m.ep_x.data_as<float>(), *h = m.ep_h.data_as<float>(), *act = m.ep_act.data_as<float>();
  // The other sources first, each one's weight gradients to the sink; this rank's own last, left
  // in grads() with the rest of its leaf's gradient.
  for (int k = 1; k <= P; ++k) {
    const int q = (me + k) % P;
    const SourceLeaf at(be_, m.source_leaf[size_t(q)]);
    size_t r = start[size_t(q)];
    for (int j = 0; j < El; ++j) {
      const auto n = size_t(m.got[size_t(q) * size_t(El) + size_t(j)]);
      expert_backward(layer, S + me * El + j, int(n), dyr + r * C, x + r * C, h + r * FC, act + r * F, dact + r * F,
                      dh + r * FC, dxr + r * C);
      r += n;
    }
    if (q != me) sink_(grads_.data_as<float>(), expert_tensors_[size_t(layer)]);
  }
  ep_->alltoallv(dxr, recv.data(), dxe + routed, send.data());
}

}  // namespace sb
