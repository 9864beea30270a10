// The pipeline schedules (pipeline_schedule.hpp). No arithmetic: forward, backward and the exact
// add of each leaf, in an order that only the schedule chooses, with the stage boundaries passed
// by PipeGroup (blocking, or paired exchanges in 1F1B's steady state so that no two neighbours
// wait on each other).
#include "samebits/core/model/pipeline_schedule.hpp"

#include <algorithm>
#include <chrono>

#include "samebits/det/error.hpp"

namespace sb {
namespace {

// One stage's view of the pipeline: its neighbours, and forward / backward of leaf i in its slot.
struct Stage {
  GPT& model;
  PipeGroup& pipe;
  std::span<const int32_t* const> leaves;
  GradAccumulator& acc;
  det::ExactSum& loss_sum;
  const LeafPass& pass;
  int s, P, slots;

  size_t activation() const { return size_t(model.leaf_tokens()) * size_t(model.config().n_embd); }
  // Runs a transfer, its wall time added to the group's blocked time.
  template <class F>
  void transfer(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    pipe.times.blocked += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  bool first() const { return s == 0; }
  bool last() const { return s == P - 1; }
  void use(int i) { model.use_slot(i % slots); }

  void recv_forward(int i) {
    if (first()) return;
    use(i);
    transfer([&] { pipe.recv(model.stage_input(), activation(), s - 1); });
  }
  void send_forward(int i) {
    if (last()) return;
    use(i);
    transfer([&] { pipe.send(model.stage_output(), activation(), s + 1); });
  }
  void recv_backward(int i) {
    if (last()) return;
    transfer([&] { pipe.recv(model.stage_grad(), model.gradient_message(i % slots), s + 1); });
  }
  void send_backward(int i) {
    if (first()) return;
    transfer([&] { pipe.send(model.stage_grad(), model.gradient_message(i % slots), s - 1); });
  }
  void forward(int i) {
    use(i);
    const size_t leaf = static_cast<size_t>(i);
    if (pass.before_forward) pass.before_forward(leaf);
    model.forward(leaves[leaf]);
    loss_sum.merge(model.loss_sum());  // empty before the last stage
    if (pass.after_forward) pass.after_forward(leaf);
  }
  void backward(int i) {
    use(i);
    if (pass.before_forward) pass.before_forward(static_cast<size_t>(i));  // a traced leaf's rows
    model.backward(pass.loss_scale);
    acc.add_leaves(model.grads().data_as<float>(), nullptr, pass.leaf_squares);
  }
};

// The m micro-batches of one flush in `schedule`'s order.
void run_schedule(Stage& st, PipeSchedule schedule, int m) {
  GPT& model = st.model;
  const int s = st.s, P = st.P, slots = st.slots;
  if (schedule == PipeSchedule::gpipe) {
    for (int i = 0; i < m; ++i) st.recv_forward(i), st.forward(i), st.send_forward(i);
    for (int i = 0; i < m; ++i) st.recv_backward(i), st.backward(i), st.send_backward(i);
    return;
  }
  // 1F1B: warm-up forwards, then forward(j) / backward(i) pairs whose boundary transfers are
  // exchanges with the neighbour doing the matching backward / forward, then the cool-down.
  const int warm = std::min(P - 1 - s, m), steady = m - warm;
  for (int i = 0; i < warm; ++i) st.recv_forward(i), st.forward(i), st.send_forward(i);
  if (steady > 0) st.recv_forward(warm);
  for (int k = 0; k < steady; ++k) {
    const int j = k + warm;  // the forward of this pair; k its backward
    st.forward(j);
    if (!st.last()) {
      st.use(j);
      const float* out = model.stage_output();
      st.transfer([&] {
        st.pipe.exchange(out, st.activation(), s + 1, model.stage_grad(), model.gradient_message(k % slots), s + 1);
      });
    }
    st.backward(k);
    if (st.first()) continue;
    if (k + 1 < steady) {
      st.use(j + 1);
      float* in = model.stage_input();
      st.transfer([&] {
        st.pipe.exchange(model.stage_grad(), model.gradient_message(k % slots), s - 1, in, st.activation(), s - 1);
      });
    } else {
      st.send_backward(k);
    }
  }
  for (int i = steady; i < m; ++i) st.recv_backward(i), st.backward(i), st.send_backward(i);
}

}  // namespace

void accumulate_pipelined(GPT& model, std::span<const int32_t* const> leaves, GradAccumulator& acc,
                          det::ExactSum& loss_sum, const LeafPass& pass, PipeSchedule schedule) {
  PipeGroup* pipe = model.pipe();
  SB_CHECK(pipe != nullptr, "accumulate_pipelined: the model has no pipeline group");
  SB_CHECK(!pass.on_leaf,
           "accumulate_pipelined: a leaf's loss and whole gradient are on no one stage (LeafPass::on_leaf)");
  SB_CHECK(acc.size() == model.flat_size(), "gradient accumulator of ", acc.size(),
           " elements given for a model whose flat gradient has ", model.flat_size());
  const int m = static_cast<int>(leaves.size()), P = pipe->stages(), s = pipe->stage();
  if (m == 0) return;
  // 1F1B keeps at most P − s micro-batches in flight on stage s; GPipe all of them.
  const int slots = schedule == PipeSchedule::gpipe ? m : std::min(P - s, m);
  model.set_slots(slots);
  if (model.experts() != nullptr) model.set_gradient_sink(accumulator_sink(model, acc, pass.leaf_squares));
  Stage st{model, *pipe, leaves, acc, loss_sum, pass, s, P, slots};
  const auto start = std::chrono::steady_clock::now();
  run_schedule(st, schedule, m);
  pipe->times.flush += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace sb
