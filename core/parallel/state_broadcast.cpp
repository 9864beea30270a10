// broadcast_state (parallel/state_broadcast.hpp): the TrainerState encoded as bytes (byte_codec.hpp),
// one broadcast of its length and one of its content.
#include "samebits/core/parallel/state_broadcast.hpp"

#include "byte_stream.hpp"
#include "samebits/core/byte_codec.hpp"

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
    w.put(uint64_t{state.optimizer.size()});
    for (const StateArray& a : state.optimizer) {
      w.put_string(a.name);
      w.put_vector(a.data);
    }
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
  state.optimizer.resize(r.get<uint64_t>());
  for (StateArray& a : state.optimizer) {
    a.name = r.get_string();
    a.data = r.get_vector<float>();
  }
  r.finish();
}

}  // namespace sb
