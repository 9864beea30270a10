// The tensor-parallel linear layers of the GPT (docs/DISTRIBUTED.md §10): chain passing. A GEMM
// output element is one fma chain over k ascending (rule 1; Backend::gemm with accumulate
// continues the chain from C's value), so when k is split across the group the rank owning the
// first k-segment starts the chain from +0, hands its fp32 partial (rows × cols) to the owner of
// the next segment, which continues it, and so on; the last adds the bias (one addition, as
// matmul_forward) and broadcasts. Every element is the unsplit chain, bit for bit; no float is
// ever summed across ranks. The vocabulary-parallel embedding and head follow the same rule: the
// embedding's rows are each written by the rank holding the token's row, the head's logit columns
// are chains over C (local) gathered bit for bit, its dinp a chain over the vocabulary passed rank
// to rank. Without a group every function is the unsplit call itself.
#include "samebits/core/model/gpt.hpp"

#include "samebits/det/error.hpp"

namespace sb {

void GPT::row_forward(float* out, const float* inp, const float* w, const float* bias, int N, int Cl, int OC) {
  if (tp_ == nullptr) return be_.matmul_forward(out, inp, w, bias, N, Cl, OC);
  const int S = tp_->size(), r = tp_->rank();
  const size_t n = static_cast<size_t>(N) * static_cast<size_t>(OC);
  // out (N, OC) += inp (N, Cl) · w (OC, Cl)ᵀ over this rank's k-segment, continuing the chain.
  if (r > 0) tp_->recv(out, n, r - 1);
  be_.gemm(Trans::no, Trans::yes, N, OC, Cl, inp, Cl, w, Cl, out, OC, r > 0, be_.numerics().precision);
  if (r + 1 < S) {
    tp_->send(out, n, r + 1);
  } else if (bias != nullptr) {
    be_.bias_forward(out, bias, N, OC);
  }
  tp_->broadcast(out, n, S - 1);
}

void GPT::col_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                       int C, int OCl, int groups) {
  if (tp_ == nullptr) return be_.matmul_backward(dinp, dw, dbias, dout, inp, w, N, C, OCl);
  be_.matmul_backward(nullptr, dw, dbias, dout, inp, w, N, C, OCl);  // this rank's rows: local
  const int S = tp_->size(), r = tp_->rank();
  SB_CHECK(groups >= 1 && OCl % groups == 0, "column-parallel backward of ", OCl, " columns in ", groups, " blocks");
  const int block = OCl / groups;  // columns of one block on one rank
  const size_t n = static_cast<size_t>(N) * static_cast<size_t>(C);
  // dinp (N, C) = dout·W: k = the full output index, visited block by block, rank by rank.
  const int steps = groups * S;
  for (int s = 0; s < steps; ++s) {
    const int g = s / S, holder = s % S;
    if (holder != r) continue;
    if (s > 0) tp_->recv(dinp, n, (s - 1) % S);
    be_.gemm(Trans::no, Trans::no, N, C, block, dout + static_cast<size_t>(g) * block, OCl,
             w + static_cast<size_t>(g) * block * static_cast<size_t>(C), C, dinp, C, s > 0, be_.numerics().precision);
    if (s + 1 < steps) tp_->send(dinp, n, (s + 1) % S);
  }
  tp_->broadcast(dinp, n, S - 1);
}

void GPT::embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe) {
  const int B = B_, T = cfg_.seq_len, C = cfg_.n_embd;
  if (tp_ == nullptr) return be_.embedding_forward(out, tokens, wte, wpe, B, T, C, vocab_rows_);
  const int S = tp_->size(), r = tp_->rank();
  const size_t n = static_cast<size_t>(B) * T * C;
  if (r > 0) tp_->recv(out, n, r - 1);
  be_.embedding_forward(out, tokens, wte, wpe, B, T, C, vocab_rows_);
  if (r + 1 < S) tp_->send(out, n, r + 1);
  tp_->broadcast(out, n, S - 1);
}

void GPT::head_forward(float* logits, float* staging, const float* inp, const float* w) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd, V = cfg_.vocab;
  if (tp_ == nullptr) return be_.matmul_forward(logits, inp, w, nullptr, N, C, V);
  be_.matmul_forward(staging, inp, w, nullptr, N, C, vocab_rows_.count());
  tp_->gather_columns(staging, logits, static_cast<size_t>(N), vocab_split_);
}

void GPT::head_backward(float* dinp, float* dw, const float* dlogits, const float* inp, const float* w) {
  const int N = B_ * cfg_.seq_len, C = cfg_.n_embd, V = cfg_.vocab;
  if (tp_ == nullptr) return be_.matmul_backward(dinp, dw, nullptr, dlogits, inp, w, N, C, V);
  const int S = tp_->size(), r = tp_->rank(), rows = vocab_rows_.count();
  const Precision prec = be_.numerics().precision;
  const float* mine = dlogits + vocab_rows_.begin;  // this rank's columns of (N, V)
  // Backend::matmul_backward's two GEMMs on this rank's columns: dw (rows, C) = mineᵀ·inp, and
  // dinp (N, C) = dlogits·w continued over ranks in vocabulary order.
  if (r > 0) tp_->recv(dinp, static_cast<size_t>(N) * C, r - 1);
  be_.gemm(Trans::no, Trans::no, N, C, rows, mine, V, w, C, dinp, C, r > 0, prec);
  if (r + 1 < S) tp_->send(dinp, static_cast<size_t>(N) * C, r + 1);
  be_.gemm(Trans::yes, Trans::no, rows, C, N, mine, V, inp, C, dw, C, false, prec);
  tp_->broadcast(dinp, static_cast<size_t>(N) * C, S - 1);
}

}  // namespace sb
