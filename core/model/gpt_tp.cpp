// The tensor-parallel pieces of the GPT (docs/DISTRIBUTED.md §10): chain passing. A GEMM output
// element is one fma chain over k ascending (rule 1; Backend::gemm with accumulate continues the
// chain from C's value), so when k is split across the group the rank owning the first k-segment
// starts the chain from +0, hands its fp32 partial to the owner of the next segment, which
// continues it, and so on; the last adds the bias (one addition, as matmul_forward) and
// broadcasts. Every element is the unsplit chain, bit for bit; no float is ever summed across
// ranks. The chains pass in row chunks (rows are independent outputs, so a chunk's chains are the
// whole buffer's): while rank r continues chunk c, rank r−1 already works on chunk c+1, and the
// segments overlap. The vocabulary-parallel embedding, head and loss follow the same rule: the
// embedding's rows are each written by the rank holding the token's row; the logits stay on the
// rank of their columns; the loss's row max and 32 lane partials (ops/softmax_xent.hpp) pass rank
// to rank in column order; the head's dinp is a chain over the vocabulary. Without a group every
// function is the unsplit call itself. Under numerics.gemm = exact a product's value does not
// depend on how k is cut, so the row-parallel products and the column-parallel dinp sum the ranks'
// exact integer dots over the group (ops::GemmProblem::split_over) and pass no chain.
#include <algorithm>

#include "samebits/core/model/gpt.hpp"
#include "samebits/core/ops/softmax_xent.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

// The chain of `steps` segments over x (rows, width), segment s on rank s % size, in row chunks:
// chunk c of segment s is received from segment s−1's rank, run(s, first row, rows) continues it,
// and it goes on to segment s+1's rank. A chain that visits the group more than once passes the
// whole buffer from the last rank to rank 0 between visits (rank 0 still sends its chunks of the
// previous visit, so a chunk passed round would wait for it: with blocking sends, a deadlock).
template <class Segment>
void pass_chain(TpGroup& g, float* x, int rows, size_t width, int steps, int chunks, Segment run) {
  const int S = g.size(), r = g.rank();
  const int K = std::max(1, std::min(chunks, rows));
  for (int s = r; s < steps; s += S) {
    if (s > 0 && r == 0) g.recv(x, size_t(rows) * width, S - 1);
    for (int c = 0; c < K; ++c) {
      const int lo = int(int64_t(rows) * c / K), n = int(int64_t(rows) * (c + 1) / K) - lo;
      float* chunk = x + size_t(lo) * width;
      if (r > 0) g.recv(chunk, size_t(n) * width, r - 1);
      run(s, lo, n);
      if (r + 1 < S && s + 1 < steps) g.send(chunk, size_t(n) * width, r + 1);
    }
    if (r + 1 == S && s + 1 < steps) g.send(x, size_t(rows) * width, 0);
  }
}

}  // namespace

void GPT::row_forward(float* out, const float* inp, const float* w, const float* bias, int N, int Cl, int OC,
                      int groups) {
  if (tp_ == nullptr) return be_.matmul_forward(out, inp, w, bias, N, Cl, OC);
  const int S = tp_->size();
  const Precision prec = be_.numerics().precision;
  if (be_.numerics().gemm == GemmMode::exact)
    return be_.gemm({Trans::no, Trans::yes, N, OC, Cl, inp, Cl, w, Cl, out, OC, false, prec, bias, tp_, Cl * S});
  SB_CHECK(groups >= 1 && Cl % groups == 0, "row-parallel forward of ", Cl, " columns in ", groups, " blocks");
  const int block = Cl / groups;  // k of one block on one rank
  // out (N, OC) += inp (N, block) · w (OC, block)ᵀ over each k-segment, continuing the chain.
  pass_chain(*tp_, out, N, size_t(OC), groups * S, chain_chunks_, [&](int s, int lo, int n) {
    const size_t k = size_t(s / S) * block;
    float* o = out + size_t(lo) * OC;
    be_.gemm({Trans::no, Trans::yes, n, OC, block, inp + size_t(lo) * Cl + k, Cl, w + k, Cl, o, OC, s > 0, prec});
    if (s + 1 == groups * S && bias != nullptr) be_.bias_forward(o, bias, n, OC);
  });
  tp_->broadcast(out, size_t(N) * OC, S - 1);
}

void GPT::qk_norm_backward(float* dqkv, float* dwq, float* dwk, const float* dout, const float* qkv, const float* wq,
                           const float* wk, const float* rstd, int N, int NH, int G) {
  const int hd = cfg_.head_dim();
  if (tp_ == nullptr) return be_.qk_norm_backward(dqkv, dwq, dwk, dout, qkv, wq, wk, rstd, N, NH, G, hd, false);
  const int S = tp_->size(), r = tp_->rank();
  if (r > 0) tp_->recv(dwq, size_t(hd), r - 1), tp_->recv(dwk, size_t(hd), r - 1);
  be_.qk_norm_backward(dqkv, dwq, dwk, dout, qkv, wq, wk, rstd, N, NH, G, hd, r > 0);
  if (r + 1 < S) tp_->send(dwq, size_t(hd), r + 1), tp_->send(dwk, size_t(hd), r + 1);
  tp_->broadcast(dwq, size_t(hd), S - 1);
  tp_->broadcast(dwk, size_t(hd), S - 1);
}

void GPT::col_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                       int C, int OCl, int OC, int groups) {
  if (tp_ == nullptr) return be_.matmul_backward(dinp, dw, dbias, dout, inp, w, N, C, OCl);
  be_.matmul_backward(nullptr, dw, dbias, dout, inp, w, N, C, OCl);  // this rank's rows: local
  const Precision prec = be_.numerics().precision;
  if (be_.numerics().gemm == GemmMode::exact)  // k-order is free: the local columns in one product
    return be_.gemm({Trans::no, Trans::no, N, C, OCl, dout, OCl, w, C, dinp, C, false, prec, nullptr, tp_, OC});
  const int S = tp_->size();
  SB_CHECK(groups >= 1 && OCl % groups == 0, "column-parallel backward of ", OCl, " columns in ", groups, " blocks");
  const int block = OCl / groups;  // columns of one block on one rank
  // dinp (N, C) = dout·W: k = the full output index, visited block by block, rank by rank.
  pass_chain(*tp_, dinp, N, size_t(C), groups * S, chain_chunks_, [&](int s, int lo, int n) {
    const size_t g = size_t(s / S) * block;
    be_.gemm({Trans::no, Trans::no, n, C, block, dout + size_t(lo) * OCl + g, OCl, w + g * C, C, dinp + size_t(lo) * C,
              C, s > 0, prec});
  });
  tp_->broadcast(dinp, size_t(N) * C, S - 1);
}

void GPT::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe) {
  const int B = B_, T = cfg_.seq_len, C = cfg_.n_embd;
  if (tp_ == nullptr) return be_.embedding_forward(out, tokens, wte, wpe, B, T, C, vocab_rows_);
  const size_t row = size_t(T) * C;  // one sequence's (T, C)
  pass_chain(*tp_, out, B, row, tp_->size(), chain_chunks_, [&](int, int lo, int n) {
    be_.embedding_forward(out + size_t(lo) * row, tokens + size_t(lo) * T, wte, wpe, n, T, C, vocab_rows_);
  });
  tp_->broadcast(out, size_t(B) * row, tp_->size() - 1);
}

void GPT::loss_forward(float* losses, float* stats, float* max, float* part, const float* logits,
                       const int32_t* targets) {
  const int N = B_ * cfg_.seq_len, V = vocab_rows_.count();
  if (tp_ == nullptr) return be_.softmax_xent_forward(losses, stats, logits, targets, N, V);
  const int S = tp_->size(), r = tp_->rank();
  // The rows' maxima over all columns, then every rank needs them for its numerators.
  pass_chain(*tp_, max, N, 1, S, chain_chunks_,
             [&](int, int lo, int n) { be_.xent_shard_max(max + lo, logits + size_t(lo) * V, n, V, r > 0); });
  tp_->broadcast(max, size_t(N), S - 1);
  // The lane partials and the target logit, in column order; the last rank folds them.
  pass_chain(*tp_, part, N, ops::kXentPart, S, chain_chunks_, [&](int, int lo, int n) {
    be_.xent_shard_sum(part + size_t(lo) * ops::kXentPart, logits + size_t(lo) * V, max + lo, targets + lo, n, V,
                       vocab_rows_.begin, r > 0);
  });
  if (r + 1 == S) be_.xent_shard_loss(losses, stats, part, max, N);
  tp_->broadcast(losses, size_t(N), S - 1);
  tp_->broadcast(stats, 2 * size_t(N), S - 1);
}

}  // namespace sb
