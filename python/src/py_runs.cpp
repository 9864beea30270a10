// Run files from Python: samebits.train (the `samebits train` loop, the same run file),
// samebits.open_run (the command line's checked reader: a hostile file is refused with its
// message) and samebits.diff (the `samebits diff` report as data).
#include <pybind11/stl.h>

#include <Python.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <pybind11/iostream.h>

#include "bindings.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/cli/options.hpp"
#include "samebits/cli/train_run.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::py {
namespace {

using run::RunReader;

// The series column called `name` ("series/loss", or "loss" for series/loss).
const run::SeriesColumn& find_column(const std::string& name) {
  for (const std::string& path : {name, "series/" + name})
    for (const run::SeriesColumn& c : run::series_columns())
      if (c.path == path) return c;
  std::string known;
  for (const run::SeriesColumn& c : run::series_columns()) known += (known.empty() ? "" : ", ") + std::string(c.path);
  SB_FAIL("no series column '", name, "' (the columns: ", known, ")");
}

pyb::dict info_dict(const run::RunInfo& i) {
  pyb::dict d;
  d["format_version"] = i.format_version;
  d["samebits_version"] = i.samebits_version;
  d["samebits_commit"] = i.samebits_commit;
  d["experiment_id"] = i.experiment_id;
  d["steps"] = i.steps;
  d["status"] = std::string(run::to_string(i.status));
  d["error"] = i.error;
  d["backend"] = i.execution.backend;
  d["communicator"] = i.execution.communicator;
  d["threads"] = i.execution.threads;
  d["world_size"] = i.execution.world_size;
  d["layout"] = i.execution.layout;
  d["environment"] = i.execution.environment;
  d["compiler"] = i.compiler;
  d["build_type"] = i.build_type;
  d["simd"] = i.simd;
  d["host"] = i.host;
  d["time_started"] = i.time_started;
  d["time_sessions"] = i.time_sessions;
  return d;
}

pyb::dict flat_dict(const RunReader& r, const std::vector<float>& flat) {
  pyb::dict d;
  for (const run::TensorInfo& t : r.tensors()) d[pyb::str(t.name)] = copy_array(flat.data() + t.offset, t.shape);
  return d;
}

pyb::array series(const RunReader& r, const std::string& name) {
  const run::SeriesColumn& c = find_column(name);
  SB_CHECK(run::column_recorded(c, r.shape()), "run file ", r.path(), " does not record ", c.path,
           " (only runs with optim.qk_clip > 0 do)");
  const std::vector<std::byte> bytes = r.series_bytes(c);
  std::vector<pyb::ssize_t> shape{pyb::ssize_t(r.steps_recorded())};
  if (c.width != run::Width::one) shape.push_back(pyb::ssize_t(run::column_values(c, r.shape())));
  pyb::array a(pyb::dtype(numpy_dtype(c.dtype)), shape);
  if (!bytes.empty()) std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
  return a;
}

}  // namespace

void bind_runs(pyb::module_& m) {
  pyb::class_<RunReader, std::shared_ptr<RunReader>>(m, "Run",
                                                     "A run file, read and checked as the command line reads it.")
      .def_property_readonly("path", &RunReader::path)
      .def_property_readonly("info", [](const RunReader& r) { return info_dict(r.info()); })
      .def_property_readonly("config_text", [](const RunReader& r) { return r.info().config_text; })
      .def_property_readonly(
          "config",
          [](const RunReader& r) {
            return cli::parse_config_text(r.info().config_text, "the recorded config of " + r.path(), {});
          },
          "the recorded configuration (an error if this samebits cannot parse it)")
      .def_property_readonly("steps", &RunReader::steps_recorded, "steps recorded")
      .def_property_readonly("tensors",
                             [](const RunReader& r) {
                               std::vector<std::pair<std::string, std::vector<int64_t>>> out;
                               for (const run::TensorInfo& t : r.tensors()) out.emplace_back(t.name, t.shape);
                               return out;
                             })
      .def_property_readonly("columns",
                             [](const RunReader& r) {
                               std::vector<std::string> out;
                               for (const run::SeriesColumn& c : run::series_columns())
                                 if (run::column_recorded(c, r.shape())) out.emplace_back(c.path);
                               return out;
                             })
      .def("series", &series, pyb::arg("column"),
           "A series column as a NumPy array, (steps) or (steps, width): 'loss' or 'series/loss', ...")
      .def_property_readonly("snapshot_steps", &RunReader::snapshot_steps)
      .def_property_readonly("state_steps", &RunReader::state_steps)
      .def(
          "snapshot", [](const RunReader& r, int64_t step) { return flat_dict(r, r.read_snapshot(step)); },
          pyb::arg("step"), "name → the weights of the snapshot after `step` steps")
      .def(
          "state",
          [](const RunReader& r, int64_t step) {
            return PyState{r.read_state(step), r.tensors()};
          },
          pyb::arg("step"), "the state after `step` steps (one of state_steps)")
      .def_property_readonly("final_state",
                             [](const RunReader& r) -> pyb::object {
                               if (!r.has_final_state()) return pyb::none();
                               return pyb::cast(PyState{r.read_final_state(), r.tensors()});
                             })
      .def("__repr__", [](const RunReader& r) {
        return "<samebits.Run " + r.path() + ": " + std::to_string(r.steps_recorded()) + " steps, " +
               std::string(run::to_string(r.info().status)) + ">";
      });

  m.def(
      "open_run",
      [](const std::string& path) {
        pyb::gil_scoped_release nogil;
        return std::make_shared<RunReader>(RunReader::open(path));
      },
      pyb::arg("path"), "A run file, checked (seal, structure) by the command line's reader.");

  m.def(
      "diff",
      [](const std::string& a, const std::string& b, bool agreement) {
        std::string json;
        {
          pyb::gil_scoped_release nogil;
          cli::DiffOptions options;
          options.agreement = agreement;
          json = cli::diff_json(cli::diff_runs(RunReader::open(a), RunReader::open(b), options));
        }
        return pyb::module_::import("json").attr("loads")(json);
      },
      pyb::arg("a"), pyb::arg("b"), pyb::arg("agreement") = false,
      "`samebits diff A B --json` as a dict (its 'identical' key: every experiment bit equal).");

  m.def(
      "train",
      [](const Config& config, const pyb::object& out, bool resume, int micro_leaves, bool distributed_optimizer,
         int64_t stop_after, const std::vector<int64_t>& trace_steps) {
        hold_mpi_session();
        Config c = config;
        if (!out.is_none()) {
          c = cli::parse_config_text(to_ini_text(config), "the config",
                                     {"--run.out=" + pyb::str(out).cast<std::string>()});
        }
        cli::TrainRunOptions options;
        options.resume = resume;
        options.micro_leaves = micro_leaves;
        options.distributed_optimizer = distributed_optimizer;
        options.stop_after = stop_after;
        options.trace_steps = trace_steps;
        cli::TrainRunResult r;
        {
          pyb::detail::pythonbuf buffer(pyb::module_::import("sys").attr("stdout"));
          std::ostream log(&buffer);
          pyb::gil_scoped_release nogil;
          r = cli::train_run(c, options, log);
        }
        if (r.interrupted) {
          PyErr_SetString(PyExc_KeyboardInterrupt,
                          ("samebits.train: interrupted after step " + std::to_string(r.steps_done) +
                           "; checkpoint written, continue with resume=True")
                              .c_str());
          throw pyb::error_already_set();
        }
        pyb::dict d;
        d["path"] = r.path;
        d["rank"] = r.rank;
        d["first_step"] = r.first_step;
        d["steps_done"] = r.steps_done;
        d["already_finished"] = r.already_finished;
        d["stopped"] = r.stopped;
        d["seconds"] = r.seconds;
        d["bytes_written"] = r.bytes_written;
        return d;
      },
      pyb::arg("config"), pyb::arg("out") = pyb::none(), pyb::arg("resume") = false, pyb::arg("micro_leaves") = 0,
      pyb::arg("distributed_optimizer") = false, pyb::arg("stop_after") = 0,
      pyb::arg("trace_steps") = std::vector<int64_t>{},
      "`samebits train`: trains `config` into its run file (out: run.out), the same file as the CLI.");
}

}  // namespace sb::py
