// The one list of Backend's ops (an X-macro list, included once per use: no include guard). Each
// entry is SB_BACKEND_OP(name, (parameters), (arguments), (regions read), (regions written),
// (trace row shape)); from it come Backend's pure virtuals (backend.hpp), every backend's override
// declarations (backend_op_overrides.hpp), ForwardingBackend's calls and TracingBackend's rows
// (tracing_backend.cpp: each region is hashed before the call when read, after it when written; a
// null pointer is an absent region). SB_BACKEND_OP_TRACED_BY_HAND(name, (parameters), (arguments))
// marks an op whose row tracing_backend.cpp writes itself, or leaves to its caller's row. Shapes are
// row-major, outermost first; N = B·T tokens of one leaf. Backward ops overwrite their outputs
// unless stated. The includer defines SB_BACKEND_OP; this file undefines both macros at its end.
#ifndef SB_BACKEND_OP_TRACED_BY_HAND
#define SB_BACKEND_OP_TRACED_BY_HAND(name, params, args) SB_BACKEND_OP(name, params, args, (), (), ())
#endif

// out[n][o] = ops::linear_out(out[n][o], bias[o]): matmul_forward's bias (backend.hpp).
SB_BACKEND_OP(bias_forward,
              (float* out,         // (N, OC)
               const float* bias,  // (OC)
               int N, int OC),
              (out, bias, N, OC), (flat(out, int64_t(N) * OC), flat(bias, OC)), (flat(out, int64_t(N) * OC)), (N, OC))
// dbias[o] = Σ_n dout[n][o] (ops::token_sum_step over n ascending from +0; numerics().reduce
// selects the vendor order).
SB_BACKEND_OP(bias_backward,
              (float* dbias,       // (OC)
               const float* dout,  // (N, OC)
               int N, int OC),
              (dbias, dout, N, OC), (flat(dout, int64_t(N) * OC)), (flat(dbias, OC)), (OC))

// LayerNorm (ops/layernorm.hpp): row statistics in the 32-lane form; eps = kNormEps.
SB_BACKEND_OP(layernorm_forward,
              (float* out,        // (N, C)
               float* mean,       // (N)
               float* rstd,       // (N)
               const float* inp,  // (N, C)
               const float* w,    // (C)
               const float* b,    // (C) or null
               int N, int C),
              (out, mean, rstd, inp, w, b, N, C), (flat(inp, int64_t(N) * C), flat(w, C), flat(b, C)),
              (flat(out, int64_t(N) * C), flat(mean, N), flat(rstd, N)), (N, C))
// dw[c] = Σ_n dout·xhat, db[c] = Σ_n dout (n ascending).
SB_BACKEND_OP(layernorm_backward,
              (float* dinp,        // (N, C)
               float* dw,          // (C)
               float* db,          // (C) or null
               const float* dout,  // (N, C)
               const float* inp,   // (N, C)
               const float* w,     // (C)
               const float* mean,  // (N)
               const float* rstd,  // (N)
               int N, int C),
              (dinp, dw, db, dout, inp, w, mean, rstd, N, C),
              (flat(dout, int64_t(N) * C), flat(inp, int64_t(N) * C), flat(w, C), flat(mean, N), flat(rstd, N)),
              (flat(dinp, int64_t(N) * C), flat(dw, C), flat(db, C)), (N, C))

// RMSNorm (ops/rmsnorm.hpp): out = x·rstd·w, rstd = 1/√(mean(x²) + eps).
SB_BACKEND_OP(rmsnorm_forward,
              (float* out,        // (N, C)
               float* rstd,       // (N)
               const float* inp,  // (N, C)
               const float* w,    // (C)
               int N, int C),
              (out, rstd, inp, w, N, C), (flat(inp, int64_t(N) * C), flat(w, C)),
              (flat(out, int64_t(N) * C), flat(rstd, N)), (N, C))
SB_BACKEND_OP(rmsnorm_backward,
              (float* dinp,        // (N, C)
               float* dw,          // (C)
               const float* dout,  // (N, C)
               const float* inp,   // (N, C)
               const float* w,     // (C)
               const float* rstd,  // (N)
               int N, int C),
              (dinp, dw, dout, inp, w, rstd, N, C),
              (flat(dout, int64_t(N) * C), flat(inp, int64_t(N) * C), flat(w, C), flat(rstd, N)),
              (flat(dinp, int64_t(N) * C), flat(dw, C)), (N, C))

// Causal multi-head self-attention (ops/attention.hpp). qkv rows are [q | k | v], each C wide,
// head h at columns h·hs .. h·hs+hs-1 (hs = C / NH). att holds the softmax probabilities
// (entries t2 > t are written as 0).
SB_BACKEND_OP(attention_forward,
              (float* out,        // (B, T, C)
               float* att,        // (B, NH, T, T)
               const float* qkv,  // (B, T, 3C)
               int B, int T, int C, int NH),
              (out, att, qkv, B, T, C, NH), (flat(qkv, int64_t(B) * T * 3 * C)),
              (flat(out, int64_t(B) * T * C), flat(att, int64_t(B) * NH * T * T)), (B, T, C))
SB_BACKEND_OP(attention_backward,
              (float* dqkv,        // (B, T, 3C)
               float* datt,        // (B, NH, T, T) scratch: d(scores)
               const float* dout,  // (B, T, C)
               const float* qkv,   // (B, T, 3C)
               const float* att,   // (B, NH, T, T)
               int B, int T, int C, int NH),
              (dqkv, datt, dout, qkv, att, B, T, C, NH),
              (flat(dout, int64_t(B) * T * C), flat(qkv, int64_t(B) * T * 3 * C), flat(att, int64_t(B) * NH * T * T)),
              (flat(dqkv, int64_t(B) * T * 3 * C)), (B, T, 3 * C))

// QK-clip (optim/qk_clip.hpp, ops/qk_clip.hpp): keys[h] ← max(keys[h], the largest
// ops::qk_row_max_key of head h over every sequence b and token t) for h < NH — an integer max
// over ordered keys, so one value in any order of sequences, tokens and threads.
// (clang-format would read `int32_t* keys` as a product.)
// clang-format off
SB_BACKEND_OP_TRACED_BY_HAND(qk_max_keys,
                             (int32_t* keys,     // (NH), accumulated into
                              const float* qkv,  // (B, T, 3C)
                              int B, int T, int C, int NH),
                             (keys, qkv, B, T, C, NH))
// clang-format on
// x[i] ← ops::qk_clip_apply(x[i], factor) for i < n: the W_q / W_k rows (or bias entries) of a
// clipped head.
SB_BACKEND_OP(qk_clip_scale,
              (float* x,  // (n)
               int64_t n, float factor),
              (x, n, factor), (flat(x, n)), (flat(x, n)), (n))

// Rotary positions (ops/rope.hpp) on the q and k heads of qkv, in place: row (b, t) by the table's
// row t, table[t][i] = (cos, sin) of pair i of a head of C/NH values. backward: dqkv's q and k
// rotated back. Elementwise over pairs.
SB_BACKEND_OP(rope_forward,
              (float* qkv,          // (B, T, 3C)
               const float* table,  // (T, C/NH/2, 2)
               int B, int T, int C, int NH),
              (qkv, table, B, T, C, NH), (flat(qkv, int64_t(B) * T * 3 * C), flat(table, int64_t(T) * (C / NH))),
              (flat(qkv, int64_t(B) * T * 3 * C)), (B, T, C))
SB_BACKEND_OP(rope_backward,
              (float* dqkv,         // (B, T, 3C)
               const float* table,  // (T, C/NH/2, 2)
               int B, int T, int C, int NH),
              (dqkv, table, B, T, C, NH), (flat(dqkv, int64_t(B) * T * 3 * C), flat(table, int64_t(T) * (C / NH))),
              (flat(dqkv, int64_t(B) * T * 3 * C)), (B, T, C))

// Grouped-query attention's rows (model.n_kv_head, gpt_shape.hpp): a row of qkv holds NH query
// heads, then G key heads and G value heads of hd values (W = (NH + 2G)·hd); query head h uses
// key/value head h mod G. forward: out's row is multi-head attention's [q | k | v] (3·NH·hd), each
// key and value head copied to the places of its query heads. backward: the query columns copied,
// key/value head g's gradient the chain over its query heads' places j·G + g, j ascending, from +0.
SB_BACKEND_OP(kv_repeat_forward,
              (float* out,        // (N, 3·NH·hd)
               const float* qkv,  // (N, W)
               int N, int NH, int G, int hd),
              (out, qkv, N, NH, G, hd), (flat(qkv, int64_t(N) * (NH + 2 * G) * hd)),
              (flat(out, int64_t(N) * 3 * NH * hd)), (N, 3 * NH * hd))
SB_BACKEND_OP(kv_repeat_backward,
              (float* dqkv,        // (N, W)
               const float* dout,  // (N, 3·NH·hd)
               int N, int NH, int G, int hd),
              (dqkv, dout, N, NH, G, hd), (flat(dout, int64_t(N) * 3 * NH * hd)),
              (flat(dqkv, int64_t(N) * (NH + 2 * G) * hd)), (N, (NH + 2 * G) * hd))

// QK-norm (ops/rmsnorm.hpp on each head; eps = kNormEps) of qkv rows laid out as kv_repeat's: the
// NH query heads normed with the gain wq, the G key heads with wk, the values copied.
SB_BACKEND_OP(qk_norm_forward,
              (float* out,        // (N, W)
               float* rstd,       // (N, NH + G): the query heads', then the key heads'
               const float* qkv,  // (N, W)
               const float* wq,   // (hd)
               const float* wk,   // (hd)
               int N, int NH, int G, int hd),
              (out, rstd, qkv, wq, wk, N, NH, G, hd),
              (flat(qkv, int64_t(N) * (NH + 2 * G) * hd), flat(wq, hd), flat(wk, hd)),
              (flat(out, int64_t(N) * (NH + 2 * G) * hd), flat(rstd, int64_t(N) * (NH + G))), (N, (NH + 2 * G) * hd))
// dwq[i] = Σ dout·xhat over the query heads in the order (key/value group g ascending, its heads
// j·G + g with j ascending, tokens n ascending), one chain; dwk[i] over (g, n). accumulate: the
// chains continue from dwq's and dwk's values (the ranks of a tensor-parallel group, each holding
// the next groups, in rank order); else from +0.
SB_BACKEND_OP(qk_norm_backward,
              (float* dqkv,        // (N, W)
               float* dwq,         // (hd)
               float* dwk,         // (hd)
               const float* dout,  // (N, W)
               const float* qkv,   // (N, W)
               const float* wq,    // (hd)
               const float* wk,    // (hd)
               const float* rstd,  // (N, NH + G)
               int N, int NH, int G, int hd, bool accumulate),
              (dqkv, dwq, dwk, dout, qkv, wq, wk, rstd, N, NH, G, hd, accumulate),
              (flat(dout, int64_t(N) * (NH + 2 * G) * hd), flat(qkv, int64_t(N) * (NH + 2 * G) * hd), flat(wq, hd),
               flat(wk, hd), flat(rstd, int64_t(N) * (NH + G)), accumulate ? flat(dwq, hd) : Region{},
               accumulate ? flat(dwk, hd) : Region{}),
              (flat(dqkv, int64_t(N) * (NH + 2 * G) * hd), flat(dwq, hd), flat(dwk, hd)), (N, (NH + 2 * G) * hd))

// A Mixture-of-Experts block's rows (ops/moe_combine.hpp): R rows grouped by expert, each a token
// of the leaf's N; token t's J slots name its rows in ascending expert index (−1: dropped) with
// their gates. moe_gather: xe[r] ← x[token[r]].
SB_BACKEND_OP(moe_gather,
              (float* xe,             // (R, C)
               const float* x,        // (N, C)
               const int32_t* token,  // (R)
               int N, int R, int C),
              (xe, x, token, N, R, C), (flat(x, int64_t(N) * C), flat(token, R)), (flat(xe, int64_t(R) * C)), (R, C))
// dx[t] ← dx[t] + dxe[row] over t's slots in order (accumulating into dx: the router's dinp).
SB_BACKEND_OP(moe_scatter_add,
              (float* dx,            // (N, C)
               const float* dxe,     // (R, C)
               const int32_t* rows,  // (N, J)
               int N, int R, int J, int C),
              (dx, dxe, rows, N, R, J, C),
              (flat(dx, int64_t(N) * C), flat(dxe, int64_t(R) * C), flat(rows, int64_t(N) * J)),
              (flat(dx, int64_t(N) * C)), (N, C))
// out[t] ← the chain from +0 of fma(gate, y[row], acc) over t's slots in order.
SB_BACKEND_OP(moe_combine,
              (float* out,           // (N, C)
               const float* y,       // (R, C)
               const int32_t* rows,  // (N, J)
               const float* gates,   // (N, J)
               int N, int R, int J, int C),
              (out, y, rows, gates, N, R, J, C),
              (flat(y, int64_t(R) * C), flat(rows, int64_t(N) * J), flat(gates, int64_t(N) * J)),
              (flat(out, int64_t(N) * C)), (N, C))
// dy[row] ← gate·dout[t]; dgates[t][j] ← the canonical dot of dout[t] and y[row] (0 when dropped).
SB_BACKEND_OP(moe_combine_backward,
              (float* dy,            // (R, C)
               float* dgates,        // (N, J)
               const float* dout,    // (N, C)
               const float* y,       // (R, C)
               const int32_t* rows,  // (N, J)
               const float* gates,   // (N, J)
               int N, int R, int J, int C),
              (dy, dgates, dout, y, rows, gates, N, R, J, C),
              (flat(dout, int64_t(N) * C), flat(y, int64_t(R) * C), flat(rows, int64_t(N) * J),
               flat(gates, int64_t(N) * J)),
              (flat(dy, int64_t(R) * C), flat(dgates, int64_t(N) * J)), (R, C))

// GELU, tanh form (ops/gelu.hpp), elementwise.
SB_BACKEND_OP(gelu_forward,
              (float* out,        // (n)
               const float* inp,  // (n)
               int64_t n),
              (out, inp, n), (flat(inp, n)), (flat(out, n)), (n))
SB_BACKEND_OP(gelu_backward,
              (float* dinp,        // (n)
               const float* inp,   // (n)
               const float* dout,  // (n)
               int64_t n),
              (dinp, inp, dout, n), (flat(inp, n), flat(dout, n)), (flat(dinp, n)), (n))

// SwiGLU (ops/swiglu.hpp) over N rows: a row of inp holds the gate's F values, then the up
// projection's F; out's row its F products. Elementwise.
SB_BACKEND_OP(swiglu_forward,
              (float* out,        // (N, F)
               const float* inp,  // (N, 2F)
               int64_t N, int64_t F),
              (out, inp, N, F), (flat(inp, 2 * N * F)), (flat(out, N* F)), (N, F))
SB_BACKEND_OP(swiglu_backward,
              (float* dinp,        // (N, 2F)
               const float* inp,   // (N, 2F)
               const float* dout,  // (N, F)
               int64_t N, int64_t F),
              (dinp, inp, dout, N, F), (flat(inp, 2 * N * F), flat(dout, N* F)), (flat(dinp, 2 * N * F)), (N, F))

// Softmax + cross-entropy, fused (ops/softmax_xent.hpp). Per row n: max (rule 6), denominator
// Σ exp(logit - max) (32-lane), losses[n] = log(den) - (logits[n][target] - max).
SB_BACKEND_OP(softmax_xent_forward,
              (float* losses,           // (N)
               float* stats,            // (N, 2): row max, denominator
               const float* logits,     // (N, V)
               const int32_t* targets,  // (N)
               int N, int V),
              (losses, stats, logits, targets, N, V), (flat(logits, int64_t(N) * V), flat(targets, N)),
              (flat(losses, N), flat(stats, 2 * int64_t(N))), (N))
// dlogits = ((softmax - onehot) / N) · loss_scale: the gradient of the mean loss over the N rows,
// times loss_scale (a power of two: 1 except under fp16 loss scaling).
SB_BACKEND_OP(softmax_xent_backward,
              (float* dlogits,          // (N, V)
               const float* logits,     // (N, V)
               const float* stats,      // (N, 2)
               const int32_t* targets,  // (N)
               int N, int V, float loss_scale),
              (dlogits, logits, stats, targets, N, V, loss_scale),
              (flat(logits, int64_t(N) * V), flat(stats, 2 * int64_t(N)), flat(targets, N)),
              (flat(dlogits, int64_t(N) * V)), (N, V))

// The vocabulary-parallel softmax cross-entropy (ops/softmax_xent.hpp, docs/DISTRIBUTED.md §10):
// a rank holds the logit columns [first, first + V) of every row. The ranks of a group run each
// step in column order, each continuing the buffer the previous one passed on (accumulate;
// without it the step starts the row: max from -inf, lanes from +0); xent_shard_loss on the last
// then gives softmax_xent_forward's losses and stats of the unsplit rows, bit for bit.
// max[n] <- the exact max of max[n] and the row's columns.
SB_BACKEND_OP(xent_shard_max,
              (float* max,           // (N)
               const float* logits,  // (N, V): this rank's columns
               int N, int V, bool accumulate),
              (max, logits, N, V, accumulate), (accumulate ? flat(max, N) : Region{}, flat(logits, int64_t(N) * V)),
              (flat(max, N)), (N))
// part[n] (ops::kXentPart: the denominator's 32 lane partials, the target logit) continued over
// the row's columns; targets[n] is the target's column relative to first (held here when in
// [0, V)).
SB_BACKEND_OP(xent_shard_sum,
              (float* part,             // (N, kXentPart)
               const float* logits,     // (N, V)
               const float* max,        // (N): the rows' maxima over all columns
               const int32_t* targets,  // (N)
               int N, int V, int first, bool accumulate),
              (part, logits, max, targets, N, V, first, accumulate),
              (accumulate ? flat(part, int64_t(N) * ops::kXentPart) : Region{}, flat(logits, int64_t(N) * V),
               flat(max, N), flat(targets, N)),
              (flat(part, int64_t(N) * ops::kXentPart)), (N, ops::kXentPart))
// losses[n] and stats[n] (row max, denominator) of the completed parts.
SB_BACKEND_OP(xent_shard_loss,
              (float* losses,      // (N)
               float* stats,       // (N, 2)
               const float* part,  // (N, kXentPart)
               const float* max,   // (N)
               int N),
              (losses, stats, part, max, N), (flat(part, int64_t(N) * ops::kXentPart), flat(max, N)),
              (flat(losses, N), flat(stats, 2 * int64_t(N))), (N))

// Token + position embedding: out[b][t] = wte[tokens[b][t]] + wpe[t] for every token of `rows`
// (wte holds those rows, row 0 = vocabulary row rows.begin); the other tokens' rows of out are
// left as they are (another rank of a vocabulary-parallel group writes them).
SB_BACKEND_OP(embedding_forward,
              (float* out,             // (B, T, C)
               const int32_t* tokens,  // (B, T)
               const float* wte,       // (rows.count(), C)
               const float* wpe,       // (T_max, C), T <= T_max; null: no positions (the token rows)
               int B, int T, int C, VocabRows rows),
              (out, tokens, wte, wpe, B, T, C, rows),
              (flat(tokens, int64_t(B) * T), flat(wte, int64_t(rows.count()) * C), flat(wpe, int64_t(T) * C)),
              (flat(out, int64_t(B) * T * C)), (B, T, C))
// dwte[v] += dout[n] for every token n with tokens[n] == v in `rows`, n ascending (accumulates
// into dwte, which the tied LM head may already hold; dwte holds the rows, as wte above);
// dwpe[t] = Σ_b dout[b][t], b ascending from +0 (overwrites rows 0..T-1). Throws sb::Error for a
// token outside [0, V).
SB_BACKEND_OP(embedding_backward,
              (float* dwte,            // (rows.count(), C)
               float* dwpe,            // (T_max, C), or null (no position table)
               const float* dout,      // (B, T, C)
               const int32_t* tokens,  // (B, T)
               int B, int T, int C, int V, VocabRows rows),
              (dwte, dwpe, dout, tokens, B, T, C, V, rows),
              (flat(dwte, int64_t(rows.count()) * C), flat(dout, int64_t(B) * T * C), flat(tokens, int64_t(B) * T)),
              (flat(dwte, int64_t(rows.count()) * C), flat(dwpe, int64_t(T) * C)), (rows.count(), C))

// out = a + b elementwise (out may alias a or b): the residual stream and its gradient.
SB_BACKEND_OP(residual_forward,
              (float* out,      // (n)
               const float* a,  // (n)
               const float* b,  // (n)
               int64_t n),
              (out, a, b, n), (flat(a, n), flat(b, n)), (flat(out, n)), (n))

// x[i] <- ops::leaf_mean(x[i], divisor): allreduce=native's batch gradient, summed in fp32 across
// the replicas, divided once by the leaves (times the loss scale). No row of its own: it is part
// of the trainer's `allreduce gradient` row (docs/TRACE.md).
SB_BACKEND_OP_TRACED_BY_HAND(gradient_mean,
                             (float* x,  // (n)
                              int64_t n, float divisor),
                             (x, n, divisor))
// mean[0] = ops::native_loss_mean(losses, N): reduce=native's leaf loss, a float sum over n
// ascending from +0 divided by N (the exact mean is the caller's, rule 5).
SB_BACKEND_OP(native_loss_mean,
              (float* mean,          // (1)
               const float* losses,  // (N)
               int N),
              (mean, losses, N), (flat(losses, N)), (flat(mean, 1)), (N))

#undef SB_BACKEND_OP_TRACED_BY_HAND
#undef SB_BACKEND_OP
