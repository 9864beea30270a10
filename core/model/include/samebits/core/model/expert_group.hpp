// The expert-parallel group as the model sees it (docs/DISTRIBUTED.md §12): the ranks that split a
// Mixture-of-Experts block's routed experts (ExpertShard) and exchange their tokens' rows. Rows move
// bit for bit (all-to-all); the group adds no float arithmetic, so each row is computed by the
// same ops as in one process, only on its expert's rank. parallel/ implements it over a
// Communicator; the model, below parallel, sees only this interface. Host memory (CPU ranks).
#pragma once
#include <cstddef>
#include <cstdint>

namespace sb {

class ExpertGroup {
 public:
  virtual ~ExpertGroup() = default;
  virtual int rank() const = 0;  // 0 … size()-1: the expert shard it holds
  virtual int size() const = 0;
  // in[q·n + i] ← rank q's out[rank()·n + i]: n words from every rank to every rank.
  virtual void alltoall(const int64_t* out, size_t n, int64_t* in) = 0;
  // The all-to-all of variable parts: send[q] floats of out (rank order) to rank q, recv[q] floats
  // from rank q into in (rank order); recv[q] must be rank q's send[rank()].
  virtual void alltoallv(const float* out, const size_t* send, float* in, const size_t* recv) = 0;
};

}  // namespace sb
