// The sampler (docs/CONTRACT.md rule 10): which tokens every leaf of every step trains on, as a pure
// function of (source, seq_len, leaf_size, leaves, seed, step) — the same for every world size,
// thread count and backend. Ranks take contiguous leaf ranges; the cursor restores a run exactly.
//
// Windows: window w is tokens [w*seq_len, w*seq_len + seq_len + 1) — inputs and next-token targets;
// consecutive windows share one token, so every token but the first is a target once per epoch.
// A finite source has W = (size - 1) / seq_len windows. Sequence k of the run is window
// keyed_permutation(k % W, W, seed, stream_of("data.order") + e) of epoch e = k / W.
// A generated (infinite) source is not permuted: sequence k is window k (epoch 0) — unless the
// order has a block length P > 0 (data.order_seed, docs/DATA.md): then sequence k is window
// b·P + keyed_permutation(k % P, P, seed, stream_of("data.order") + b) of block b = k / P, so each
// block of P windows is read in a keyed order (the same windows, another order).
// Leaf l of step s holds sequences (s*leaves + l)*leaf_size + [0, leaf_size).
#pragma once
#include <cstdint>

#include "samebits/data/token_source.hpp"

namespace sb::data {

// Where the run's data stands: the next sequence is position `position` of epoch `epoch`'s
// order. A checkpoint stores it; resume restores it (Sampler::step_of).
struct DataCursor {
  uint64_t epoch = 0;
  uint64_t position = 0;
  bool operator==(const DataCursor&) const = default;
};

// Leaves [begin, end) of a step that rank `rank` of `world` computes: contiguous, balanced (the
// first leaves % world ranks get one more).
struct LeafRange {
  int begin = 0;
  int end = 0;
  int count() const { return end - begin; }
};
LeafRange leaf_range(int leaves, int world, int rank);

// Which window each sequence of the run reads: the key of the permutations, and the length of the
// permuted blocks of a generated source (0: a generated source is read in stream order).
struct SampleOrder {
  uint64_t seed = 1;
  uint64_t generated_block = 0;
};

class Sampler {
 public:
  // Throws sb::Error when a parameter is out of range or the source holds less than one sequence.
  // The source must outlive the sampler. `seed`: SampleOrder{seed, 0}.
  Sampler(const TokenSource& source, int seq_len, int leaf_size, int leaves, uint64_t seed);
  Sampler(const TokenSource& source, int seq_len, int leaf_size, int leaves, SampleOrder order);

  int seq_len() const { return seq_len_; }
  int leaf_size() const { return leaf_size_; }
  int leaves() const { return leaves_; }
  uint64_t windows() const { return windows_; }  // per epoch; TokenSource::kInfinite if generated
  uint64_t sequences_per_step() const { return uint64_t(leaves_) * uint64_t(leaf_size_); }

  // The window sequence k of the run reads.
  uint64_t window(uint64_t k) const;
  // Sequence k of the run: tokens (seq_len + 1,).
  void sequence(uint64_t k, int32_t* tokens) const;
  // Leaf `leaf` of step `step`: tokens (leaf_size, seq_len + 1).
  void leaf(uint64_t step, int leaf, int32_t* tokens) const;
  // Leaves range.begin .. range.end-1 of step `step`: tokens (range.count(), leaf_size, seq_len + 1).
  void leaves(uint64_t step, LeafRange range, int32_t* tokens) const;

  // The cursor where step `step` begins (a checkpoint taken after `step` steps stores this).
  DataCursor cursor(uint64_t step) const;
  // The step that begins at `cursor`. Throws sb::Error when the cursor is not a step boundary of
  // this sampler (the data or the batch shape changed since the checkpoint).
  uint64_t step_of(DataCursor cursor) const;

 private:
  const TokenSource& source_;
  int seq_len_, leaf_size_, leaves_;
  SampleOrder order_;
  uint64_t windows_;
};

// The fixed validation set: the first `sequences` windows of a source, in order (no permutation).
class ValidationSet {
 public:
  ValidationSet(const TokenSource& source, int seq_len, uint64_t sequences);
  uint64_t size() const { return sequences_; }
  int seq_len() const { return seq_len_; }
  // Sequence i < size(): tokens (seq_len + 1,) = window i.
  void sequence(uint64_t i, int32_t* tokens) const;

 private:
  const TokenSource& source_;
  int seq_len_;
  uint64_t sequences_;
};

}  // namespace sb::data
