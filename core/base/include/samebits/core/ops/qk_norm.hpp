// QK-norm (Qwen3's; backend_op_list.hpp), host and device: RMSNorm (ops/rmsnorm.hpp) of each query
// and key head of a qkv row laid out as kv_repeat's (NH query heads, G key heads, G value heads of
// hd values). The gains' gradients are one chain each over (head, token) pairs in an order a
// tensor-parallel group can continue rank by rank: the query gain's over the key/value groups g
// ascending, within a group its query heads j·G + g with j ascending, within a head the tokens
// ascending; the key gain's over (g, token). These functions map step r of a chain to its head and
// token. Bitwise equal on every backend.
#pragma once
#include <cstdint>

#include "samebits/det/hd.hpp"

namespace sb::ops {

struct QkNormStep {
  int64_t n;     // the token
  int64_t head;  // the head among the row's NH + G normed ones (query heads first)
};

// Step r < NH·N of the query gain's chain.
SB_HD QkNormStep qk_norm_query_step(int64_t r, int64_t N, int NH, int G) {
  const int64_t per_group = int64_t{NH / G} * N, g = r / per_group, j = (r % per_group) / N;
  return {r % N, j * G + g};
}

// Step r < G·N of the key gain's chain.
SB_HD QkNormStep qk_norm_key_step(int64_t r, int64_t N, int NH) { return {r % N, NH + r / N}; }

// The first column of normed head `head` in a row of (NH + 2G)·hd values.
SB_HD int64_t qk_norm_column(int64_t head, int hd) { return head * hd; }

}  // namespace sb::ops
