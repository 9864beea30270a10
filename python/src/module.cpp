// samebits._samebits: the extension module behind the `samebits` package (python/README.md).
// Every sb::Error becomes samebits.Error carrying the command line's message, unchanged.
#include "bindings.hpp"
#include "samebits/det/error.hpp"

PYBIND11_MODULE(_samebits, m) {
  namespace pyb = pybind11;
  m.doc() = "samebits: bitwise-reproducible training, driven from Python";
  pyb::register_exception<sb::Error>(m, "Error", PyExc_RuntimeError);
  sb::py::bind_session(m);
  sb::py::bind_config(m);
  sb::py::bind_state(m);
  sb::py::bind_trainer(m);
  sb::py::bind_runs(m);
  sb::py::bind_torch_muon(m);
  sb::py::bind_torch_adamw(m);
  sb::py::bind_torch_record(m);
  sb::py::bind_torch_leaves(m);
  sb::py::bind_torch_ops(m);
}
