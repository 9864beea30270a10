// A world of simulated ranks in one process (the tests' ranks, and `samebits trace`'s replay of
// an N-rank run, docs/TRACE.md): ThreadWorld(W).rank(r) are W
// Communicators whose collectives meet through shared memory, each rank run on its own thread
// (run_ranks). Reductions follow their definitions (integer SUM modulo 2^64, OR, MAX; the float
// SUM in rank order), so the exact collectives give what MPI's would; split() gives sub-worlds
// (tensor and pipeline groups) and point-to-point messages are buffered, delivered in order. Every rank must call the
// same collectives in the same order, as with MPI; a rank that throws between collectives is
// reported, one that never joins one hangs the others (tests keep throws after the collectives).
#pragma once
#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "samebits/det/error.hpp"

#include "samebits/core/parallel/communicator.hpp"

namespace sb {

class ThreadWorld {
 public:
  explicit ThreadWorld(int world) : shared_(std::make_shared<Shared>(world)) {}
  int size() const { return shared_->world; }
  // Rank r's communicator (call once per rank).
  std::unique_ptr<Communicator> rank(int r) { return std::make_unique<Rank>(shared_, r); }

 private:
  struct Shared {
    explicit Shared(int w) : world(w), meet(w), in(size_t(w)), made(size_t(w)) {}
    int world;
    std::barrier<> meet;
    std::vector<const void*> in;                // (world) each rank's input of the current collective
    std::vector<std::shared_ptr<Shared>> made;  // (world) split(): the sub-world its leader made
    std::mutex mail_lock;                       // point-to-point: messages (from, to) in order
    std::condition_variable mail_arrived;
    std::map<std::pair<int, int>, std::deque<std::vector<unsigned char>>> mail;
  };

  class Rank final : public Communicator {
   public:
    Rank(std::shared_ptr<Shared> s, int r) : s_(std::move(s)), r_(r) {}
    int rank() const override { return r_; }
    int size() const override { return s_->world; }
    std::string describe() const override { return "threads (" + std::to_string(s_->world) + " ranks)"; }

    // The ranks passing this rank's color, ordered by (key, rank); the first makes their world.
    std::unique_ptr<Communicator> split(int color, int key) override {
      const int64_t mine[2] = {color, key};
      std::vector<std::pair<int64_t, int>> members;  // (key, rank) of this color
      exchange(
          mine,
          [&] {
            for (int q = 0; q < s_->world; ++q) {
              const auto* theirs = static_cast<const int64_t*>(s_->in[size_t(q)]);
              if (theirs[0] == color) members.push_back({theirs[1], q});
            }
            std::sort(members.begin(), members.end());
          },
          [&] {
            if (members.front().second == r_) s_->made[size_t(r_)] = std::make_shared<Shared>(int(members.size()));
          });
      s_->meet.arrive_and_wait();  // every leader's world made
      std::shared_ptr<Shared> sub = s_->made[size_t(members.front().second)];
      s_->meet.arrive_and_wait();  // every rank holds its own before a next split replaces them
      int index = 0;
      while (members[size_t(index)].second != r_) ++index;
      return std::make_unique<Rank>(std::move(sub), index);
    }

   protected:
    void do_allreduce_sum_i64(int64_t* x, size_t n) override {
      reduce<uint64_t>(reinterpret_cast<uint64_t*>(x), 0, n, [](uint64_t a, uint64_t b) { return a + b; });
    }
    void do_allreduce_sum_u64(uint64_t* x, size_t n) override {
      reduce<uint64_t>(x, 0, n, [](uint64_t a, uint64_t b) { return a + b; });
    }
    void do_allreduce_or_u32(uint32_t* x, size_t n) override {
      reduce<uint32_t>(x, 0, n, [](uint32_t a, uint32_t b) { return a | b; });
    }
    void do_allreduce_sum_f32(float* x, size_t n) override {
      reduce<float>(x, 0, n, [](float a, float b) { return a + b; });
    }
    void do_allreduce_max_u8(uint8_t* x, size_t n) override {
      reduce<uint8_t>(x, 0, n, [](uint8_t a, uint8_t b) { return a > b ? a : b; });
    }
    void do_reduce_scatter_sum_u64(uint64_t* x, const size_t* counts) override {
      size_t first = 0;
      for (int q = 0; q < r_; ++q) first += counts[q];
      reduce<uint64_t>(x, first, counts[r_], [](uint64_t a, uint64_t b) { return a + b; });
    }
    void do_broadcast(void* data, size_t bytes, int root) override {
      std::vector<unsigned char> out(bytes);
      exchange(
          data, [&] { std::memcpy(out.data(), s_->in[size_t(root)], bytes); },
          [&] { std::memcpy(data, out.data(), bytes); });
    }
    void do_allgather_u64(const uint64_t* in, size_t n, uint64_t* out) override {
      std::vector<uint64_t> all(n * size_t(s_->world));
      exchange(
          in,
          [&] {
            for (int q = 0; q < s_->world; ++q)
              std::memcpy(all.data() + size_t(q) * n, s_->in[size_t(q)], n * sizeof(uint64_t));
          },
          [&] { std::memcpy(out, all.data(), all.size() * sizeof(uint64_t)); });
    }
    void do_barrier() override { s_->meet.arrive_and_wait(); }
    void do_send(const void* data, size_t bytes, int to) override {
      const auto* p = static_cast<const unsigned char*>(data);
      const std::lock_guard<std::mutex> lock(s_->mail_lock);
      s_->mail[{r_, to}].emplace_back(p, p + bytes);
      s_->mail_arrived.notify_all();
    }
    void do_recv(void* data, size_t bytes, int from) override {
      std::unique_lock<std::mutex> lock(s_->mail_lock);
      std::deque<std::vector<unsigned char>>& box = s_->mail[{from, r_}];
      s_->mail_arrived.wait(lock, [&] { return !box.empty(); });
      SB_CHECK(box.front().size() == bytes, "rank ", r_, " expected ", bytes, " bytes from rank ", from, ", got ",
               box.front().size());
      std::memcpy(data, box.front().data(), bytes);
      box.pop_front();
    }
    // Sends are buffered: the send, then the receive, cannot wait on the peer's.
    void do_exchange(const void* out, size_t out_bytes, int to, void* in, size_t in_bytes, int from) override {
      do_send(out, out_bytes, to);
      do_recv(in, in_bytes, from);
    }

   private:
    // Deposit `mine`; every rank computes its result from every input (none written yet); then
    // every rank writes its own.
    template <class Read, class Write>
    void exchange(const void* mine, const Read& read, const Write& write) {
      s_->in[size_t(r_)] = mine;
      s_->meet.arrive_and_wait();
      read();
      s_->meet.arrive_and_wait();
      write();
    }
    // x[first, first + n) ← op over ranks in rank order of their x[first, first + n).
    template <class T, class Op>
    void reduce(T* x, size_t first, size_t n, const Op& op) {
      std::vector<T> out(n);
      exchange(
          x,
          [&] {
            for (int q = 0; q < s_->world; ++q) {
              const T* y = static_cast<const T*>(s_->in[size_t(q)]) + first;
              for (size_t i = 0; i < n; ++i) out[i] = q == 0 ? y[i] : op(out[i], y[i]);
            }
          },
          [&] { std::copy(out.begin(), out.end(), x + first); });
    }

    std::shared_ptr<Shared> s_;
    int r_;
  };

  std::shared_ptr<Shared> shared_;
};

// Runs body(r) for r < world, each on its own thread; rethrows the first rank's exception.
inline void run_ranks(int world, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace sb
