// The tensor-parallel group as the model sees it (docs/DISTRIBUTED.md §10): the ranks that share one
// replica's tensors, in Megatron's order (consecutive world ranks). The model passes fp32 partial
// chains from rank to rank and broadcasts results; it never reduces floats across ranks, so the
// group adds no float arithmetic (rule 1 holds: a chain continues on the next rank). Under
// numerics.gemm = exact it is also the ExactGroup whose integer max and sum a k-split exact GEMM
// uses (exact in any order). parallel/ implements it over a Communicator; the model, below
// parallel, sees only this interface.
#pragma once
#include <cstddef>

#include "samebits/core/backend.hpp"

namespace sb {

class TpGroup : public ExactGroup {
 public:
  virtual ~TpGroup() = default;
  virtual int rank() const = 0;  // 0 … size()-1
  virtual int size() const = 0;
  // Blocking point-to-point: x (n) to rank `to`; x (n) from rank `from`. Backend memory.
  virtual void send(const float* x, size_t n, int to) = 0;
  virtual void recv(float* x, size_t n, int from) = 0;
  // x (n) ← root's x on every rank of the group.
  virtual void broadcast(float* x, size_t n, int root) = 0;
};

}  // namespace sb
