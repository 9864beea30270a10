// Grouped-query attention's key/value heads (model.n_kv_head, backend_op_list.hpp), host and
// device: a row of qkv holds NH query heads, then G key heads and G value heads of hd values; query
// head h uses key/value head h mod G. The forward is index arithmetic (a copy); the backward sums a
// key/value head's gradient over its query heads' places j·G + g, j ascending, one fp32 chain from
// +0. Bitwise equal on every backend.
#pragma once
#include <cstdint>

#include "samebits/det/hd.hpp"

namespace sb::ops {

// The column of qkv's row (NH + 2G)·hd wide that multi-head column c (of 3·NH·hd) copies.
SB_HD int64_t kv_repeat_source(int64_t c, int NH, int G, int hd) {
  const int64_t width = int64_t{NH} * hd, part = c / width, within = c % width;
  if (part == 0) return c;  // a query column
  const int64_t head = within / hd, i = within % hd;
  return width + (part - 1) * int64_t{G} * hd + (head % G) * hd + i;
}

// The gradient of qkv's column c' (of (NH + 2G)·hd) from the multi-head gradient row dout.
SB_HD float kv_repeat_gradient(const float* dout, int64_t c, int NH, int G, int hd) {
  const int64_t width = int64_t{NH} * hd;
  if (c < width) return dout[c];
  const int64_t kv = c - width, part = 1 + kv / (int64_t{G} * hd), g = (kv % (int64_t{G} * hd)) / hd, i = kv % hd;
  float acc = 0.0f;
  for (int64_t h = g; h < NH; h += G) acc += dout[part * width + h * hd + i];
  return acc;
}

}  // namespace sb::ops
