// broadcast_state, broadcast_arrays, broadcast_flat (parallel/state_broadcast.hpp): the content
// encoded as bytes (byte_codec.hpp), one broadcast of its length and one of its content.
#include "samebits/core/parallel/state_broadcast.hpp"

#include <string>

#include "byte_stream.hpp"
#include "samebits/core/byte_codec.hpp"
#include "samebits/det/error.hpp"

namespace sb {

void broadcast_state(TrainerState& state, int root, Communicator& comm) {
  ByteWriter w;
  if (comm.rank() == root) {
    w.put(state.step);
    w.put(state.updates);
    w.put(state.cursor);
    w.put(state.loss_scale);
    w.put_string(state.experiment_id);
    w.put_vector(state.weights);
    dist_detail::put_arrays(w, state.optimizer);
  }
  dist_detail::broadcast_bytes(w.bytes(), root, comm);
  if (comm.rank() == root) return;
  ByteReader r(w.bytes(), "the state broadcast from rank " + std::to_string(root), dist_detail::kBroadcastHint);
  state.step = r.get<int64_t>();
  state.updates = r.get<int64_t>();
  state.cursor = r.get<data::DataCursor>();
  state.loss_scale = r.get<LossScaleState>();
  state.experiment_id = r.get_string();
  state.weights = r.get_vector<float>();
  state.optimizer = dist_detail::get_arrays(r);
  r.finish();
}

const std::vector<StateArray>& broadcast_arrays(const std::vector<StateArray>& arrays,
                                                std::vector<StateArray>& received, int root, Communicator& comm) {
  if (comm.size() == 1) return arrays;
  ByteWriter w;
  if (comm.rank() == root) dist_detail::put_arrays(w, arrays);
  dist_detail::broadcast_bytes(w.bytes(), root, comm);
  if (comm.rank() == root) return arrays;
  ByteReader r(w.bytes(), "the optimizer state broadcast from rank " + std::to_string(root),
               dist_detail::kBroadcastHint);
  received = dist_detail::get_arrays(r);
  r.finish();
  return received;
}

const std::vector<float>& broadcast_flat(const std::vector<float>& full, std::vector<float>& received, size_t n,
                                         int root, Communicator& comm) {
  const bool mine = comm.rank() == root;
  uint64_t count = mine ? full.size() : 0;
  if (comm.size() > 1) comm.broadcast(&count, sizeof(count), root);
  SB_CHECK(count == n, "weights of ", count, " values for a parameter buffer of ", n);
  if (comm.size() == 1) return full;
  if (!mine) received.resize(n);
  // root's buffer is only read (a broadcast writes the other ranks' buffers)
  comm.broadcast(mine ? const_cast<float*>(full.data()) : received.data(), n * sizeof(float), root);
  return mine ? full : received;
}

}  // namespace sb
