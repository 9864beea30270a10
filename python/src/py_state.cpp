// samebits.State: a trainer's state as a checkpoint holds it (core/train_state.hpp), from
// Trainer.export_state() or a run file (Run.state, Run.final_state); Trainer.from_state continues
// from it bitwise. Its arrays are copies.
#include <pybind11/stl.h>

#include <string>

#include "bindings.hpp"

namespace sb::py {

void bind_state(pyb::module_& m) {
  pyb::class_<PyState>(m, "State", "A training state: weights, optimizer state, step and data cursor.")
      .def_property_readonly(
          "step", [](const PyState& s) { return s.state.step; }, "steps completed")
      .def_property_readonly(
          "updates", [](const PyState& s) { return s.state.updates; }, "optimizer updates applied")
      .def_property_readonly("experiment_id", [](const PyState& s) { return s.state.experiment_id; })
      .def_property_readonly(
          "weights", [](const PyState& s) { return copy_array(s.state.weights); },
          "the flat parameter buffer (flat_size), padding included")
      .def_property_readonly(
          "params",
          [](const PyState& s) {
            pyb::dict d;
            for (const run::TensorInfo& t : s.tensors)
              d[pyb::str(t.name)] = copy_array(s.state.weights.data() + t.offset, t.shape);
            return d;
          },
          "name → the tensor's weights")
      .def_property_readonly(
          "optimizer",
          [](const PyState& s) {
            pyb::dict d;
            for (const StateArray& a : s.state.optimizer) d[pyb::str(a.name)] = copy_array(a.data);
            return d;
          },
          "'tensor/kind' → the optimizer state buffer (flat)")
      .def("__repr__", [](const PyState& s) {
        return "<samebits.State step " + std::to_string(s.state.step) + " of experiment " + s.state.experiment_id + ">";
      });
}

}  // namespace sb::py
