// The Python module samebits._samebits (python/README.md): the trainer, its tensors and its run
// files from Python, over the same libraries and numerics flags as the command line. Each
// bind_* function adds one part of the API to the module; the helpers below turn C++ buffers into
// NumPy arrays (read-only views that keep their owner alive, or copies).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::py {

namespace pyb = pybind11;

void bind_config(pyb::module_& m);
void bind_trainer(pyb::module_& m);
void bind_runs(pyb::module_& m);
void bind_session(pyb::module_& m);
void bind_torch_muon(pyb::module_& m);
void bind_torch_adamw(pyb::module_& m);
void bind_torch_record(pyb::module_& m);
void bind_torch_leaves(pyb::module_& m);
void bind_torch_ops(pyb::module_& m);

// The backend samebits.torch's optimizers run on for a tensor on `device` (-1: the CPU backend,
// host memory; else a deterministic CUDA backend of that GPU, one per GPU, kept; CUDA builds only,
// otherwise an error). Called with the GIL held (py_torch_muon.cpp).
std::shared_ptr<Backend> torch_backend(int device);

// samebits.torch's flat layout of (name, shape) tensors: each at the next kParamAlign boundary, in
// order (the Recorder's tensor table, Leaves' accumulator; py_torch_record.cpp).
std::vector<ParamView> torch_layout(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors);

// Under an MPI launcher: makes sure the process holds its MPI session (py_session.cpp).
void hold_mpi_session();
// Closes every open Trainer (at exit, before MPI is finalised; py_trainer.cpp).
void close_trainers();

// The NumPy dtype of a run-file column's values.
inline const char* numpy_dtype(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u64: return "uint64";
    default: return "uint8";
  }
}

// A read-only NumPy view of `count` elements at `data` with `shape`, which keeps `owner` (the
// Python object that owns the memory) alive as long as the view lives.
template <class T>
pyb::array_t<T> readonly_view(const T* data, const std::vector<int64_t>& shape, pyb::handle owner) {
  pyb::array_t<T> a(std::vector<pyb::ssize_t>(shape.begin(), shape.end()), data, owner);
  pyb::detail::array_proxy(a.ptr())->flags &= ~pyb::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// A NumPy array that owns a copy of `data` (shape: its elements, or `shape` when given).
template <class T>
pyb::array_t<T> copy_array(const T* data, const std::vector<int64_t>& shape) {
  pyb::array_t<T> a(std::vector<pyb::ssize_t>(shape.begin(), shape.end()));
  if (a.size() > 0) std::memcpy(a.mutable_data(), data, size_t(a.size()) * sizeof(T));
  return a;
}
template <class T>
pyb::array_t<T> copy_array(const std::vector<T>& v) {
  return copy_array(v.data(), {int64_t(v.size())});
}

// The Python face of a TrainerState (export_state, open_run(...).state): the state itself and
// its tensor table, so that `params` can name the flat buffer's tensors.
struct PyState {
  TrainerState state;
  std::vector<run::TensorInfo> tensors;  // layout order
};
void bind_state(pyb::module_& m);

}  // namespace sb::py
