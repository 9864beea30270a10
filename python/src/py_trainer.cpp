// samebits.Trainer: the command line's trainer (core/train/trainer.hpp) on the backend and
// communicator `samebits train` would use in this process (a CPU backend alone; under mpirun the
// MPI communicator, so every rank trains its share of the leaves with the same bits). A step runs
// without the GIL; a Ctrl-C during it lets it finish, then raises KeyboardInterrupt at the step
// boundary (last_stats holds the finished step's statistics).
//
// Tensors: params and grads are read-only NumPy views of the trainer's memory on the CPU backend
// (they change as the trainer steps; each owns a reference to that memory, so a view that outlives
// its trainer stays valid by construction); copies on a CUDA backend. optimizer_state is a copy
// (the optimizer's buffers are not shared objects).
#include <pybind11/stl.h>

#include <Python.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/train/perturbation.hpp"
#include "samebits/core/train/rank_setup.hpp"
#include "samebits/core/train/trainer.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::py {
namespace {

class PyTrainer;
std::set<PyTrainer*>& open_trainers() {
  static std::set<PyTrainer*> open;
  return open;
}

class PyTrainer {
 public:
  PyTrainer(const Config& config, int micro_leaves, bool distributed_optimizer, bool statistics) : config_(config) {
    hold_mpi_session();
    TrainerOptions options;
    options.micro_leaves = micro_leaves;
    options.distributed_optimizer = distributed_optimizer;
    options.statistics = statistics;
    initial_ = io::load_initial_weights(config_);
    if (!config_.train.init.empty()) options.initial_weights = &initial_;
    setup_ = make_rank_setup(config_);
    trainer_ = std::make_unique<Trainer>(config_, *setup_.backend, *setup_.comm, options);
    open_trainers().insert(this);
  }
  ~PyTrainer() { close(); }
  PyTrainer(const PyTrainer&) = delete;
  PyTrainer& operator=(const PyTrainer&) = delete;

  Trainer& get() {
    SB_CHECK(trainer_ != nullptr, "this samebits.Trainer was closed");
    return *trainer_;
  }
  // The trainer first, then its communicator and backend.
  void close() {
    open_trainers().erase(this);
    trainer_.reset();
    setup_.comm.reset();
    setup_.backend.reset();
  }
  const Config& config() const { return config_; }
  pyb::object last_stats = pyb::none();

  // Refuses what a sharded layout does not hold as full tensors on this rank.
  void check_full_tensors(const char* what) {
    SB_CHECK(config_.parallel.tp == 1, "Trainer.", what, ": under parallel.tp = ", config_.parallel.tp,
             " each rank holds shards; export_state() gives the full tensors on rank 0");
    SB_CHECK(config_.parallel.pp == 1, "Trainer.", what, ": under parallel.pp = ", config_.parallel.pp,
             " each rank holds its pipeline stage's tensors only; export_state() gives the full tensors on rank 0");
    SB_CHECK(config_.parallel.ep == 1, "Trainer.", what, ": under parallel.ep = ", config_.parallel.ep,
             " each rank holds its expert shard's experts only; export_state() gives the full tensors on rank 0");
  }

  // name → each tensor of the flat buffer `flat` (layout order): read-only views on the CPU, whose
  // base owns a reference to the buffer's storage (not to the trainer: safe after close()), copies
  // from another device.
  pyb::dict flat_tensors(const Tensor& flat) {
    const bool host = flat.device() == Device::cpu;
    const pyb::capsule owner(new Tensor(flat), [](void* p) { delete static_cast<Tensor*>(p); });
    const float* base = flat.data_as<float>();
    pyb::dict d;
    for (const ParamView& p : get().model().params())
      d[pyb::str(p.name)] = host ? readonly_view(base + p.offset, p.shape, owner) : host_copy(base + p.offset, p.shape);
    return d;
  }

  // A copy of `shape` floats of backend memory at `data`.
  pyb::array_t<float> host_copy(const float* data, const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (const int64_t d : shape) n *= size_t(d);
    std::vector<float> host(n);
    if (n > 0) setup_.backend->copy_to_host(host.data(), data, n * sizeof(float));
    return copy_array(host.data(), shape);
  }

 private:
  Config config_;
  std::vector<float> initial_;
  RankSetup setup_;
  std::unique_ptr<Trainer> trainer_;
};

// The step's statistics as the run file's columns hold them (run::series_columns, the one list):
// each one-value column by its name without "series/" ("loss", "skipped" as a bool), the per-tensor
// statistics under per_tensor, the other wide columns as arrays (param_fingerprints,
// grad_fingerprints, qk_max_logits: the column's name in the plural; comm_bytes, comm_calls), the
// step's wall time as seconds; and the tensor names.
pyb::dict step_dict(const StepResult& r, const std::vector<ParamView>& params) {
  pyb::dict d, per_tensor;
  std::vector<std::string> names;
  for (const ParamView& p : params) names.push_back(p.name);
  d["tensors"] = names;
  const std::string series = "series/", per = "series/per_tensor/";
  for (const run::SeriesColumn& c : run::series_columns()) {
    std::string name(c.path);
    if (name == "timing/step_seconds") {
      d["seconds"] = r.seconds;
      continue;
    }
    std::vector<std::byte> bytes;
    c.append(r, names.size(), bytes);
    const std::vector<pyb::ssize_t> shape{pyb::ssize_t(bytes.size() / dtype_bytes(c.dtype))};
    pyb::array a(pyb::dtype(numpy_dtype(c.dtype)), shape);
    if (!bytes.empty()) std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
    if (name.rfind(per, 0) == 0) {
      per_tensor[pyb::str(name.substr(per.size()))] = a;
    } else if (c.width != run::Width::one) {
      const std::string key = name.substr(series.size());
      d[pyb::str(key.back() == 's' ? key : key + "s")] = a;
    } else {
      pyb::object value = a.attr("item")(0);
      d[pyb::str(name.substr(series.size()))] = c.dtype == DType::u8 ? pyb::bool_(value.cast<int>() != 0) : value;
    }
  }
  d["per_tensor"] = per_tensor;
  return d;
}

// After a step without the GIL: a Ctrl-C that came during it is raised now.
void raise_pending_signals() {
  if (PyErr_CheckSignals() != 0) throw pyb::error_already_set();
}

}  // namespace

void close_trainers() {
  for (PyTrainer* t : std::set<PyTrainer*>(open_trainers())) t->close();
}

void bind_trainer(pyb::module_& m) {
  pyb::class_<PyTrainer>(m, "Trainer", "The samebits trainer of a Config, driven step by step.")
      .def(pyb::init<const Config&, int, bool, bool>(), pyb::arg("config"), pyb::arg("micro_leaves") = 0,
           pyb::arg("distributed_optimizer") = false, pyb::arg("statistics") = true)
      .def_static(
          "from_state",
          [](const Config& config, const PyState& state, int micro_leaves, bool distributed_optimizer) {
            auto t = std::make_unique<PyTrainer>(config, micro_leaves, distributed_optimizer, true);
            pyb::gil_scoped_release nogil;
            t->get().import_state(state.state);
            return t;
          },
          pyb::arg("config"), pyb::arg("state"), pyb::arg("micro_leaves") = 0,
          pyb::arg("distributed_optimizer") = false,
          "A trainer that continues from `state` (export_state, or a run file's state) bitwise.")
      .def(
          "step",
          [](PyTrainer& t) {
            StepResult r;
            {
              pyb::gil_scoped_release nogil;
              r = t.get().step();
            }
            t.last_stats = step_dict(r, t.get().model().params());
            raise_pending_signals();
            return t.last_stats;
          },
          "One training step; its statistics as a dict.")
      .def(
          "leaf_tokens",
          [](PyTrainer& t, uint64_t step, int leaf) {
            const Config& c = t.get().config();
            SB_CHECK(step >= 1, "Trainer.leaf_tokens: steps count from 1, got ", step);
            SB_CHECK(leaf >= 0 && leaf < c.data.leaves, "Trainer.leaf_tokens: leaf ", leaf, " of a step of ",
                     c.data.leaves, " leaves");
            const int64_t rows = c.data.leaf_size, cols = c.model.seq_len + 1;
            pyb::array_t<int32_t> out({rows, cols});
            t.get().sampler().leaf(step - 1, leaf, out.mutable_data());  // the sampler counts steps done
            return out;
          },
          pyb::arg("step"), pyb::arg("leaf"),
          "The tokens of leaf `leaf` of step `step` (counted from 1, as a step's statistics): (leaf_size, "
          "seq_len + 1), a sequence's inputs its first seq_len tokens, its targets its last seq_len.")
      .def(
          "evaluate",
          [](PyTrainer& t) {
            pyb::gil_scoped_release nogil;
            return t.get().evaluate();
          },
          "The validation loss now (collective under mpirun).")
      .def_readonly("last_stats", &PyTrainer::last_stats, "The statistics of the last step (None before one).")
      .def_property_readonly("steps_done", [](PyTrainer& t) { return t.get().steps_done(); })
      .def_property_readonly("finished", [](PyTrainer& t) { return t.get().finished(); })
      .def_property_readonly("config", &PyTrainer::config)
      .def_property_readonly("tensors",
                             [](PyTrainer& t) {
                               std::vector<std::pair<std::string, std::vector<int64_t>>> out;
                               for (const ParamView& p : t.get().model().params()) out.emplace_back(p.name, p.shape);
                               return out;
                             })
      .def_property_readonly(
          "params",
          [](PyTrainer& t) {
            t.check_full_tensors("params");
            return t.flat_tensors(t.get().model().weights());
          },
          "name → read-only view of the current weights")
      .def_property_readonly(
          "grads",
          [](PyTrainer& t) {
            t.check_full_tensors("grads");
            SB_CHECK(!t.get().options().distributed_optimizer,
                     "Trainer.grads: with the distributed optimizer each rank holds only its own tensors' gradient");
            return t.flat_tensors(t.get().gradient());
          },
          "name → read-only view of the last step's batch gradient (unscaled, clipped)")
      .def_property_readonly(
          "optimizer_state",
          [](PyTrainer& t) {
            t.check_full_tensors("optimizer_state");
            const std::vector<ParamView>& params = t.get().model().params();
            pyb::dict d;
            for (const StateBuffer& b : t.get().optimizer().state()) {
              const std::string tensor = b.name.substr(0, b.name.rfind('/'));
              const ParamView* p = find_param(params, tensor);
              const std::vector<int64_t> shape =
                  p != nullptr && p->numel == b.numel ? p->shape : std::vector<int64_t>{int64_t(b.numel)};
              d[pyb::str(b.name)] = t.host_copy(b.data, shape);
            }
            return d;
          },
          "'tensor/kind' → a copy of each optimizer state buffer")
      .def(
          "param_fingerprints",
          [](PyTrainer& t) {
            const std::vector<uint64_t> f = t.get().param_fingerprints();
            pyb::dict d;
            const std::vector<ParamView>& params = t.get().model().params();
            for (size_t i = 0; i < params.size(); ++i) d[pyb::str(params[i].name)] = f[i];
            return d;
          },
          "name → fingerprint of the current weights (collective under mpirun)")
      .def(
          "perturb",
          [](PyTrainer& t, const std::string& name, int64_t index, int64_t ulps) {
            t.check_full_tensors("perturb");
            SB_CHECK(ulps != 0, "Trainer.perturb: ulps must be non-zero");
            PerturbConfig p;
            p.tensor = name;
            p.index = index;
            p.ulps = ulps;
            p.step = t.get().steps_done();
            const PerturbationApplied a = apply_perturbation(p, t.get().model());
            pyb::dict d;
            d["tensor"] = a.tensor;
            d["index"] = a.index;
            d["before"] = a.before;
            d["after"] = a.after;
            return d;
          },
          pyb::arg("name"), pyb::arg("index"), pyb::arg("ulps") = 1,
          "Moves element `index` of weight `name` by `ulps` representable floats now (the CLI's "
          "[perturb] with perturb.step = steps_done); every rank must call it.")
      .def(
          "export_state",
          [](PyTrainer& t) {
            TrainerState s;
            {
              pyb::gil_scoped_release nogil;
              s = t.get().export_state();
            }
            return PyState{std::move(s), run::tensor_infos(gpt_param_layout(t.config().model))};
          },
          "A copy of everything needed to continue bitwise (collective under mpirun).")
      .def(
          "import_state",
          [](PyTrainer& t, const PyState& s) {
            pyb::gil_scoped_release nogil;
            t.get().import_state(s.state);
          },
          pyb::arg("state"))
      .def("close", &PyTrainer::close, "Frees the trainer; views taken from it stay valid (they own their memory).")
      .def("__enter__", [](pyb::object self) { return self; })
      .def("__exit__", [](PyTrainer& t, const pyb::args&) { t.close(); });

  m.def(
      "fingerprint",
      [](const pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>& a) {
        return det::fingerprint(a.data(), size_t(a.size()));
      },
      pyb::arg("array"), "det::fingerprint of float32 values (what the run file records per tensor).");
}

}  // namespace sb::py
