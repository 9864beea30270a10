// A keyed bijection of [0, n): the data order of each epoch and the rows of the synthetic language's
// Markov chain. A balanced Feistel network whose round function is Philox4x32-10 (Salmon et al.
// 2011), cycle-walked back into [0, n) (Black & Rogaway 2002). Pure integer function of
// (x, n, seed, stream): no state, O(1) memory, the same value on every machine and build.
#pragma once
#include <cstdint>

namespace sb::data {

// The image of x (< n) under the permutation of [0, n) keyed by (seed, stream). For a fixed key,
// x -> keyed_permutation(x, n, seed, stream) is a bijection of [0, n). Requires 1 <= n.
uint64_t keyed_permutation(uint64_t x, uint64_t n, uint64_t seed, uint64_t stream);

}  // namespace sb::data
