// The Communicator interface on one process: the identity reductions, the all-gather copy, the
// root check, and the byte accounting per collective kind that the run store records.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "samebits/core/parallel/communicator.hpp"
#include "samebits/det/error.hpp"

TEST_CASE("the local communicator is rank 0 of 1 and leaves buffers unchanged") {
  auto comm = sb::make_local_communicator();
  CHECK(comm->rank() == 0);
  CHECK(comm->size() == 1);
  CHECK(comm->describe() == "local");
  std::vector<int64_t> limbs{1, -2, 3};
  comm->allreduce_sum_i64(limbs.data(), limbs.size());
  CHECK(limbs == std::vector<int64_t>{1, -2, 3});
  uint32_t status = 5;
  comm->allreduce_or_u32(&status, 1);
  CHECK(status == 5);
  float x[2] = {0.5f, -0.0f};
  comm->allreduce_sum_f32(x, 2);
  CHECK(x[0] == 0.5f);
  CHECK(std::signbit(x[1]));
  const uint64_t mine[2] = {7, 9};
  uint64_t all[2] = {0, 0};
  comm->allgather_u64(mine, 2, all);
  CHECK(all[0] == 7);
  CHECK(all[1] == 9);
  char data[3] = {'a', 'b', 'c'};
  comm->broadcast(data, 3, 0);
  CHECK(data[1] == 'b');
  CHECK_THROWS_AS(comm->broadcast(data, 3, 1), sb::Error);
  uint8_t bytes[3] = {0, 7, 255};
  comm->allreduce_max_u8(bytes, 3);
  CHECK(bytes[2] == 255);
  std::vector<uint64_t> parts{4, ~uint64_t{0}, 6};
  const size_t counts[1] = {3};
  comm->reduce_scatter_sum_u64(parts.data(), counts);
  CHECK(parts == std::vector<uint64_t>{4, ~uint64_t{0}, 6});
}

TEST_CASE("bytes and calls are counted per collective kind") {
  auto comm = sb::make_local_communicator();
  std::vector<int64_t> a(10);
  std::vector<uint64_t> u(3);
  std::vector<float> f(5);
  comm->allreduce_sum_i64(a.data(), a.size());
  comm->allreduce_sum_i64(a.data(), 4);
  const sb::CommCounters before = comm->counters();
  comm->allreduce_sum_u64(u.data(), u.size());
  comm->allreduce_sum_f32(f.data(), f.size());
  comm->barrier();
  const sb::CommCounters& c = comm->counters();
  auto k = [](sb::Collective kind) { return static_cast<size_t>(kind); };
  CHECK(c.calls[k(sb::Collective::allreduce_i64)] == 2);
  CHECK(c.bytes[k(sb::Collective::allreduce_i64)] == 14 * 8);
  CHECK(c.bytes[k(sb::Collective::allreduce_u64)] == 24);
  CHECK(c.bytes[k(sb::Collective::allreduce_f32)] == 20);
  CHECK(c.calls[k(sb::Collective::barrier)] == 1);
  CHECK(c.total_bytes() == 112 + 24 + 20);
  const sb::CommCounters since = c - before;
  CHECK(since.calls[k(sb::Collective::allreduce_i64)] == 0);
  CHECK(since.total_bytes() == 44);
  CHECK(sb::to_string(sb::Collective::allgather) == "allgather");
  uint8_t ranges[6] = {};
  comm->allreduce_max_u8(ranges, 6);
  uint64_t parts[5] = {};
  const size_t counts[1] = {5};
  comm->reduce_scatter_sum_u64(parts, counts);
  CHECK(comm->counters().bytes[k(sb::Collective::allreduce_max)] == 6);
  CHECK(comm->counters().bytes[k(sb::Collective::reduce_scatter)] == 40);
  CHECK(sb::to_string(sb::Collective::reduce_scatter) == "reduce_scatter");
  comm->reset_counters();
  CHECK(comm->counters().total_bytes() == 0);
}
