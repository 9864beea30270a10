// The tiny GPT experiment the training tests and tests/tools/mpi_train_driver train (header-only,
// no test framework). Not part of any computation.
#pragma once
#include <cstdint>
#include <optional>

#include "samebits/core/config.hpp"

namespace sb::test {

// The tiny GPT: vocabulary 64, 16 tokens a sequence, n_layer blocks 32 wide with 2 heads, trained
// on the synthetic language. Unset optionals keep Config's defaults; a test sets what else it
// varies on the returned Config.
struct TinyGpt {
  int n_layer = 2;
  int leaf_size = 1;
  int leaves = 4;
  int64_t steps = 10;
  int64_t warmup = 2;
  int64_t eval_every = 0;                // 0: no validation
  std::optional<int64_t> eval_leaves{};  // Config's default when unset
  std::optional<uint64_t> doc_len = 32;  // synthetic document length; Config's default when unset
  int threads = 1;
};

inline Config tiny_gpt_config(const TinyGpt& t) {
  Config c;
  c.model.vocab = 64;
  c.model.seq_len = 16;
  c.model.n_layer = t.n_layer;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.data.leaf_size = t.leaf_size;
  c.data.leaves = t.leaves;
  if (t.doc_len) c.data.synthetic.doc_len = *t.doc_len;
  c.train.steps = t.steps;
  c.train.warmup = t.warmup;
  c.train.eval_every = t.eval_every;
  if (t.eval_leaves) c.train.eval_leaves = *t.eval_leaves;
  c.run.threads = t.threads;
  return c;
}

}  // namespace sb::test
