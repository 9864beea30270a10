// samebits.torch.Recorder's native half (python/samebits/torch/recorder.py): a PyTorch loop's run
// file written by the command line's RunWriter (docs/FORMAT.md), its fingerprints the XXH3-64 of
// each tensor's raw bits (det::fingerprint), its gradient statistics from samebits' exact sums
// (the trainer's batch_sums, rule 5: the same bits however the gradient was made), and its trace
// file by the command line's trace writer.
#include <pybind11/stl.h>

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "samebits/core/exact_norm.hpp"
#include "samebits/core/io/trace_file.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::py {
namespace {

using Floats = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// XXH3-64 of an array's raw bytes (any dtype; C-contiguous).
uint64_t raw_fingerprint(const pyb::buffer& b) {
  const pyb::buffer_info info = b.request();
  SB_CHECK(info.ndim == 0 || info.strides.back() == info.itemsize,
           "samebits.torch: fingerprint of a non-contiguous "
           "array (pass .contiguous())");
  return det::fingerprint(info.ptr, size_t(info.size * info.itemsize));
}

std::string hex_id(const std::string& text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, det::fingerprint(text.data(), text.size()));
  return buf;
}

// One step's per-tensor gradient statistics and the global norm, from exact sums (as
// train/statistics.cpp makes them); the leaf statistics are not defined (one batch: NaN).
void gradient_stats(const std::vector<Floats>& grads, const std::vector<run::TensorInfo>& tensors, StepStats& s) {
  det::ExactSum total;
  for (size_t t = 0; t < grads.size(); ++t) {
    const size_t n = size_t(grads[t].size());
    SB_CHECK(n == tensors[t].numel, "samebits.torch: gradient of ", tensors[t].name, " has ", n,
             " elements, the tensor ", tensors[t].numel);
    std::unique_ptr<TensorSums> sums = make_host_tensor_sums({TensorSpan{0, n}});
    sums->add(grads[t].data(), true);
    det::ExactSum sq, sum;
    float max_abs = 0;
    sums->read(&sq, &sum, &max_abs);
    const TensorBatchSums b = batch_sums(sq, sum, max_abs, n);
    TensorStats ts;
    ts.grad_norm = b.norm;
    ts.grad_max = b.max_abs;
    ts.grad_mean = b.mean;
    ts.batch_sq = float(b.sq);
    ts.update_rms = ts.update_weight_ratio = ts.ortho_error = ts.leaf_sq_mean = kNaN;
    ts.grad_sq_est = ts.trace_est = ts.noise_scale = kNaN;
    s.tensors.push_back(ts);
    total.merge(sq);
  }
  s.grad_norm = sqrt_rounded(total);
  s.batch_sq = float(total.to_f64());
  s.leaf_sq_mean = s.grad_sq_est = s.trace_est = s.noise_scale = kNaN;
}

// Float32 tensors into a flat buffer of the table's layout (zeros in the gaps).
std::vector<float> flat(const std::vector<Floats>& tensors, const std::vector<run::TensorInfo>& table) {
  SB_CHECK(tensors.size() == table.size(), "samebits.torch: ", tensors.size(), " tensors for a table of ",
           table.size());
  std::vector<float> out(run::flat_size(table), 0.0f);
  for (size_t t = 0; t < table.size(); ++t) {
    SB_CHECK(uint64_t(tensors[t].size()) == table[t].numel, "samebits.torch: ", table[t].name, " has ",
             tensors[t].size(), " elements, expected ", table[t].numel);
    std::copy(tensors[t].data(), tensors[t].data() + tensors[t].size(), out.begin() + int64_t(table[t].offset));
  }
  return out;
}

// A PyTorch run file: the header from the Recorder's texts, rows from its steps.
class TorchRun {
 public:
  TorchRun(const std::string& path, const std::string& config_text, const std::string& experiment_text,
           const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors, const pyb::dict& execution) {
    run::RunHeader h;
    h.config_text = config_text;
    h.experiment_text = experiment_text;
    h.experiment_id = hex_id(experiment_text);
    h.steps = 1;  // the rows recorded so far, from the first record on (set_steps)
    layout_ = torch_layout(tensors);
    h.tensors = run::tensor_infos(layout_);
    h.execution.backend = execution["backend"].cast<std::string>();
    h.execution.communicator = execution["communicator"].cast<std::string>();
    h.execution.threads = execution["threads"].cast<int64_t>();
    h.execution.world_size = execution["world_size"].cast<int64_t>();
    h.execution.layout = "dp " + std::to_string(h.execution.world_size) + " x tp 1";
    h.execution.environment = execution["environment"].cast<std::string>();
    table_ = h.tensors;
    experiment_id_ = h.experiment_id;
    writer_ = std::make_unique<run::RunWriter>(run::RunWriter::create(path, h));
  }

  // Step `step`'s row: params (raw arrays, after the update) and grads (raw arrays) fingerprinted,
  // grads32 (float32) summed exactly; scalars as the loop reports them. Under samebits.torch.Leaves
  // `leaves` is (its per-tensor leaf sums of squares as ExactSum words, summed over the ranks; the
  // step's leaves; their rows; the scale of a leaf's gradient against the batch's): the leaf
  // statistics as the trainer's (train/statistics.hpp); None: NaN.
  void record(const pyb::dict& scalars, const std::vector<pyb::buffer>& params, const std::vector<pyb::buffer>& grads,
              const std::vector<Floats>& grads32, const pyb::object& leaves) {
    StepResult r;
    StepStats& s = r.stats;
    s.step = scalars["step"].cast<int64_t>();
    s.loss = scalars["loss"].cast<float>();
    s.val_loss = kNaN;
    s.lr_factor = scalars["lr_factor"].cast<double>();
    s.lr = scalars["lr"].cast<double>();
    s.adam_lr = scalars["adam_lr"].cast<double>();
    s.muon_momentum = scalars["momentum"].cast<double>();
    s.tokens = scalars["tokens"].cast<int64_t>();
    tokens_seen_ += s.tokens;
    s.tokens_seen = tokens_seen_;
    for (const pyb::buffer& p : params) r.param_fingerprints.push_back(raw_fingerprint(p));
    for (const pyb::buffer& g : grads) r.grad_fingerprints.push_back(raw_fingerprint(g));
    if (leaves.is_none()) {
      pyb::gil_scoped_release nogil;
      gradient_stats(grads32, table_, s);
    } else {
      const auto [words, count, leaf_size, leaf_scale] =
          leaves.cast<std::tuple<std::vector<int64_t>, int64_t, int64_t, double>>();
      pyb::gil_scoped_release nogil;
      gradient_stats(grads32, table_, s);  // the global norm; the per-tensor fields again below
      GradientStatistics stats(layout_);
      SB_CHECK(words.size() == stats.words(), "samebits.torch: leaf statistics of ", words.size(),
               " words for a model whose statistics have ", stats.words());
      stats.from_words(words.data());
      stats.finish(flat(grads32, table_).data(), leaf_scale, count, leaf_size, s);
    }
    r.seconds = scalars["seconds"].cast<double>();
    writer_->set_steps(s.step);
    writer_->record(r);
  }
  void snapshot(int64_t step, const std::vector<Floats>& params) { writer_->snapshot(step, flat(params, table_)); }
  void checkpoint(int64_t step, const std::vector<Floats>& params,
                  const std::vector<std::pair<std::string, Floats>>& optimizer, bool final) {
    TrainerState st;
    st.step = st.updates = step;
    st.weights = flat(params, table_);
    for (const auto& [name, a] : optimizer)
      st.optimizer.push_back({name, std::vector<float>(a.data(), a.data() + a.size())});
    st.experiment_id = experiment_id_;
    if (final) writer_->finish(std::move(st));
    else writer_->checkpoint(std::move(st));
  }
  void commit() { writer_->commit(); }
  void fail(const std::string& message) { writer_->fail(message); }
  const std::string& experiment_id() const { return experiment_id_; }

 private:
  std::unique_ptr<run::RunWriter> writer_;
  std::vector<ParamView> layout_;
  std::vector<run::TensorInfo> table_;
  std::string experiment_id_;
  int64_t tokens_seen_ = 0;
};

using PyRow = std::tuple<std::string, std::string, std::vector<uint64_t>, std::vector<uint64_t>, std::vector<int64_t>>;

// Steps of (step, rows): each row (site, op, input hashes, output hashes, first output's shape);
// written as `samebits train --trace-steps` writes, marked not replayable (samebits trace
// compares the recorded streams).
void write_trace(const std::string& path, const std::string& experiment_id,
                 const std::vector<std::pair<int64_t, std::vector<PyRow>>>& steps) {
  std::vector<io::TracedStep> out;
  for (const auto& [step, rows] : steps) {
    io::TracedStep s;
    s.step = step;
    for (const auto& [site, op, inputs, outputs, shape] : rows) {
      trace::Row r;
      r.site = site;
      r.op = op;
      r.inputs = inputs;
      r.outputs = outputs;
      r.shape = shape;
      s.rows.push_back(std::move(r));
    }
    out.push_back(std::move(s));
  }
  io::write_trace_file(path, experiment_id, out, false);
}

}  // namespace

std::vector<ParamView> torch_layout(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  std::vector<ParamView> out;
  size_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    ParamView p{name, shape, offset, 1, ParamKind::matrix, 0.0f, 0.0f};
    for (int64_t d : shape) p.numel *= size_t(d);
    out.push_back(p);
    offset += (p.numel + kParamAlign - 1) / kParamAlign * kParamAlign;
  }
  return out;
}

void bind_torch_record(pyb::module_& m) {
  pyb::class_<TorchRun>(m, "_TorchRun", "A PyTorch loop's run file (samebits.torch.Recorder).")
      .def(pyb::init<const std::string&, const std::string&, const std::string&,
                     const std::vector<std::pair<std::string, std::vector<int64_t>>>&, const pyb::dict&>(),
           pyb::arg("path"), pyb::arg("config_text"), pyb::arg("experiment_text"), pyb::arg("tensors"),
           pyb::arg("execution"))
      .def("record", &TorchRun::record, pyb::arg("scalars"), pyb::arg("params"), pyb::arg("grads"), pyb::arg("grads32"),
           pyb::arg("leaves") = pyb::none())
      .def("snapshot", &TorchRun::snapshot, pyb::arg("step"), pyb::arg("params"))
      .def("checkpoint", &TorchRun::checkpoint, pyb::arg("step"), pyb::arg("params"), pyb::arg("optimizer"),
           pyb::arg("final"))
      .def("commit", &TorchRun::commit)
      .def("fail", &TorchRun::fail, pyb::arg("message"))
      .def_property_readonly("experiment_id", &TorchRun::experiment_id);
  m.def("_write_trace", &write_trace, pyb::arg("path"), pyb::arg("experiment_id"), pyb::arg("steps"),
        "A trace file of recorded streams (samebits.torch.Recorder's trace_steps).");
  m.def("_fingerprint_raw", &raw_fingerprint, pyb::arg("array"), "XXH3-64 of an array's raw bytes.");
}

}  // namespace sb::py
