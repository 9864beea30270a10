// The single-process Communicator: rank 0 of a world of 1. A reduction over one rank is the
// identity, so every collective leaves its buffer unchanged — the same bits as any world size
// gives for the exact collectives.
#include <cstring>
#include <memory>

#include "samebits/core/parallel/communicator.hpp"

namespace sb {
namespace {

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "local"; }

 protected:
  void do_allreduce_sum_i64(int64_t*, size_t) override {}
  void do_allreduce_sum_u64(uint64_t*, size_t) override {}
  void do_allreduce_or_u32(uint32_t*, size_t) override {}
  void do_allreduce_sum_f32(float*, size_t) override {}
  void do_allreduce_max_u8(uint8_t*, size_t) override {}
  void do_reduce_scatter_sum_u64(uint64_t*, const size_t*) override {}
  void do_broadcast(void*, size_t, int) override {}
  void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) override {
    if (out != in) std::memmove(out, in, n * sizeof(uint64_t));
  }
  void do_barrier() override {}
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace sb
