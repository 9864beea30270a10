// stage_parts.hpp: world rank 0 asks a stage for one array at a time ({kind, index}, two uint64
// words), the stage sends its values; kind done ends the stage's loop.
#include "stage_parts.hpp"

#include <exception>

#include "byte_stream.hpp"
#include "samebits/det/error.hpp"

namespace sb::dist_detail {
namespace {

enum Kind : uint64_t { done = 0, weights = 1, array = 2 };

// An optimizer array of the whole model: the stage that holds it and its index there.
struct Source {
  int stage = 0;
  size_t index = 0;
};

}  // namespace

void serve_parts(const StageArrays& mine, const std::vector<size_t>& numel, Communicator& pipeline) {
  ByteWriter w;
  w.put(uint64_t(mine.names.size()));
  for (size_t i = 0; i < mine.names.size(); ++i) {
    w.put_string(mine.names[i]);
    w.put(mine.sizes[i]);
  }
  send_bytes(w.bytes(), 0, pipeline);
  for (;;) {
    uint64_t ask[2];
    pipeline.recv(ask, sizeof(ask), 0);
    if (ask[0] == done) return;
    const bool weight = ask[0] == weights;
    SB_CHECK((weight && ask[1] < numel.size() && mine.weights[ask[1]] != nullptr) ||
                 (ask[0] == array && ask[1] < mine.data.size()),
             "pipeline stage ", pipeline.rank(), " was asked for ", weight ? "tensor " : "optimizer array ", ask[1],
             ", which it does not hold", kBroadcastHint);
    const float* from = weight ? mine.weights[ask[1]] : mine.data[ask[1]];
    pipeline.send(from, (weight ? numel[ask[1]] : mine.sizes[ask[1]]) * sizeof(float), 0);
  }
}

void fetch_parts(const StageArrays& mine, const std::vector<size_t>& numel, const std::vector<int>& owner,
                 const std::function<size_t(const std::string&)>& tensor_of, Communicator& pipeline,
                 const std::function<void(const StateParts&)>& use) {
  const auto tell_done = [&] {
    const uint64_t end[2] = {done, 0};
    for (int s = 1; s < pipeline.size(); ++s) pipeline.send(end, sizeof(end), s);
  };
  StateParts parts;
  std::vector<Source> sources;
  std::vector<float> held;  // the last array fetched from another stage
  try {
    // The arrays per model tensor, each stage's in its order: the one-process optimizer's order.
    std::vector<std::vector<std::pair<std::string, uint64_t>>> named(numel.size());
    std::vector<std::vector<Source>> from(numel.size());
    const auto add = [&](int stage, size_t index, std::string name, uint64_t size) {
      const size_t t = tensor_of(name);
      SB_CHECK(owner[t] == stage, "optimizer array '", name, "' came from pipeline stage ", stage,
               ", which does not own its tensor", kBroadcastHint);
      named[t].emplace_back(std::move(name), size);
      from[t].push_back({stage, index});
    };
    for (size_t i = 0; i < mine.names.size(); ++i) add(0, i, mine.names[i], mine.sizes[i]);
    for (int s = 1; s < pipeline.size(); ++s) {
      std::vector<std::byte> bytes;
      recv_bytes(bytes, s, pipeline);
      ByteReader r(bytes, "the optimizer arrays of pipeline stage " + std::to_string(s), kBroadcastHint);
      const uint64_t count = r.get<uint64_t>();
      for (uint64_t i = 0; i < count; ++i) {
        std::string name = r.get_string();
        add(s, size_t(i), std::move(name), r.get<uint64_t>());
      }
      r.finish();
    }
    for (size_t t = 0; t < numel.size(); ++t) {
      for (size_t k = 0; k < named[t].size(); ++k) {
        parts.names.push_back(named[t][k].first);
        parts.sizes.push_back(named[t][k].second);
        sources.push_back(from[t][k]);
      }
    }
    const auto fetch = [&](int stage, Kind kind, size_t index, size_t count) {
      const uint64_t ask[2] = {kind, index};
      pipeline.send(ask, sizeof(ask), stage);
      held.resize(count);
      pipeline.recv(held.data(), count * sizeof(float), stage);
      return static_cast<const float*>(held.data());
    };
    parts.tensors = numel.size();
    parts.weights = [&](size_t t) { return owner[t] == 0 ? mine.weights[t] : fetch(owner[t], weights, t, numel[t]); };
    parts.array = [&](size_t i) {
      const Source& s = sources[i];
      return s.stage == 0 ? mine.data[s.index] : fetch(s.stage, array, s.index, parts.sizes[i]);
    };
    use(parts);
  } catch (...) {
    tell_done();
    throw;
  }
  tell_done();
}

}  // namespace sb::dist_detail
