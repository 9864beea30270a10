// A communicator whose collectives and point-to-point messages run on host copies of backend
// buffers (parallel/launch.hpp make_staged_communicator): device → host, the inner (MPI) call,
// host → device. Only copies of bits, so the results are the inner communicator's, bit for bit.
#include <utility>
#include <vector>

#include "samebits/core/parallel/launch.hpp"
#include "samebits/det/error.hpp"

namespace sb {
namespace {

class StagedCommunicator final : public Communicator {
 public:
  StagedCommunicator(std::unique_ptr<Communicator> inner, Backend& backend)
      : inner_(std::move(inner)), backend_(backend) {
    SB_CHECK(inner_ != nullptr, "a host-staged communicator needs an inner communicator");
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string describe() const override {
    return inner_->describe() + ", " + std::string(device_name(backend_.device())) + " buffers staged through the host";
  }
  Communicator* transport() override { return inner_.get(); }

 protected:
  void do_allreduce_sum_i64(int64_t* x, size_t n) override {
    round_trip(x, n, [&](int64_t* h) { inner_->allreduce_sum_i64(h, n); });
  }
  void do_allreduce_sum_u64(uint64_t* x, size_t n) override {
    round_trip(x, n, [&](uint64_t* h) { inner_->allreduce_sum_u64(h, n); });
  }
  void do_allreduce_or_u32(uint32_t* x, size_t n) override {
    round_trip(x, n, [&](uint32_t* h) { inner_->allreduce_or_u32(h, n); });
  }
  void do_allreduce_max_u8(uint8_t* x, size_t n) override {
    round_trip(x, n, [&](uint8_t* h) { inner_->allreduce_max_u8(h, n); });
  }
  void do_reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) override {
    size_t n = 0;
    for (int r = 0; r < size(); ++r) n += counts[r];
    round_trip(x, n, [&](uint64_t* h) { inner_->reduce_scatter_sum_u64(h, counts); });
  }
  void do_allreduce_sum_f32(float* x, size_t n) override {
    round_trip(x, n, [&](float* h) { inner_->allreduce_sum_f32(h, n); });
  }
  void do_broadcast(void* data, size_t bytes, int root) override {
    unsigned char* h = host(bytes);
    const bool mine = root == rank();
    if (mine) backend_.copy_to_host(h, data, bytes);
    inner_->broadcast(h, bytes, root);
    if (!mine) backend_.copy_from_host(data, h, bytes);
  }
  void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) override {
    const size_t bytes = n * sizeof(uint64_t), total = bytes * static_cast<size_t>(size());
    unsigned char* h = host(bytes + total);  // in (n), then out (size(), n)
    backend_.copy_to_host(h, in, bytes);
    inner_->allgather_u64(reinterpret_cast<const uint64_t*>(h), n, reinterpret_cast<uint64_t*>(h + bytes));
    backend_.copy_from_host(out, h + bytes, total);
  }
  void do_barrier() override { inner_->barrier(); }
  void do_send(const void* data, size_t bytes, int to) override {
    unsigned char* h = host(bytes);
    backend_.copy_to_host(h, data, bytes);
    inner_->send(h, bytes, to);
  }
  void do_recv(void* data, size_t bytes, int from) override {
    unsigned char* h = host(bytes);
    inner_->recv(h, bytes, from);
    backend_.copy_from_host(data, h, bytes);
  }
  void do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) override {
    unsigned char* h = host(out_bytes + in_bytes);  // out, then in
    backend_.copy_to_host(h, out, out_bytes);
    inner_->exchange(h, out_bytes, to, h + out_bytes, in_bytes, from);
    backend_.copy_from_host(in, h + out_bytes, in_bytes);
  }

 private:
  // The staging buffer, at least `bytes` long (8-byte aligned: vector<uint64_t>).
  unsigned char* host(size_t bytes) {
    staging_.resize((bytes + 7) / 8);
    return reinterpret_cast<unsigned char*>(staging_.data());
  }
  // x (n) to the host, op on the copy, back.
  template <class T, class Op>
  void round_trip(T* x, size_t n, const Op& op) {
    T* h = reinterpret_cast<T*>(host(n * sizeof(T)));
    backend_.copy_to_host(h, x, n * sizeof(T));
    op(h);
    backend_.copy_from_host(x, h, n * sizeof(T));
  }

  std::unique_ptr<Communicator> inner_;
  Backend& backend_;
  std::vector<uint64_t> staging_;
};

}  // namespace

std::unique_ptr<Communicator> make_staged_communicator(std::unique_ptr<Communicator> inner, Backend& backend) {
  return std::make_unique<StagedCommunicator>(std::move(inner), backend);
}

}  // namespace sb
