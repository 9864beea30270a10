// checkpoint.hpp: checkpoint groups and files, their folder, and the choice of the resume point.
// Every value read back is checked (dtype, shape, ranges) before use; a bad checkpoint is an
// sb::Error that find_resume_point turns into a note and a fall-back to the previous state.
#include "samebits/core/io/checkpoint.hpp"

#include <algorithm>
#include <sstream>

#include "samebits/core/io/run_store.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::run {
namespace {

h5::Dims dims_of(const std::vector<int64_t>& shape) { return h5::Dims(shape.begin(), shape.end()); }

// An optimizer buffer name is "<tensor>/<kind>": components non-empty, not "." or "..".
void check_buffer_name(const h5::Group& g, const std::string& name) {
  SB_CHECK(!name.empty() && name.front() != '/' && name.back() != '/', g.where(), ": optimizer buffer name '",
           name, "' is not of the form <tensor>/<kind>");
  std::istringstream parts(name);
  std::string part;
  while (std::getline(parts, part, '/')) {
    SB_CHECK(!part.empty() && part != "." && part != "..", g.where(), ": optimizer buffer name '", name,
             "' has an empty, '.' or '..' component");
  }
}

}  // namespace

void write_params(h5::Group& group, std::span<const float> flat, const std::vector<TensorInfo>& tensors) {
  SB_CHECK(flat.size() == flat_size(tensors), "parameters of ", flat.size(), " values given for a layout of ",
           flat_size(tensors));
  for (const TensorInfo& t : tensors) {
    group.write_dataset<float>(t.name, flat.subspan(t.offset, t.numel), dims_of(t.shape));
  }
}

std::vector<float> read_params(const h5::Group& group, const std::vector<TensorInfo>& tensors) {
  std::vector<float> flat(flat_size(tensors), 0.0f);
  for (const TensorInfo& t : tensors) {
    const h5::Dataset d = group.dataset(t.name);
    d.check(h5::DType::f32, dims_of(t.shape));
    const std::vector<float> values = d.read<float>();
    std::copy(values.begin(), values.end(), flat.begin() + static_cast<std::ptrdiff_t>(t.offset));
  }
  return flat;
}

void write_state(h5::Group& group, const TrainerState& s, const std::vector<TensorInfo>& tensors) {
  group.set_attr("step", s.step);
  group.set_attr("updates", s.updates);
  group.set_attr("cursor_epoch", s.cursor.epoch);
  group.set_attr("cursor_position", s.cursor.position);
  group.set_attr("loss_scale", s.loss_scale.scale);
  group.set_attr("loss_scale_good_steps", s.loss_scale.good_steps);
  group.set_attr("loss_scale_skipped_steps", s.loss_scale.skipped_steps);
  group.set_attr("experiment_id", s.experiment_id);
  h5::Group params = group.create_group("params");
  write_params(params, s.weights, tensors);
  h5::Group optimizer = group.create_group("optimizer");
  std::vector<std::string> names;
  for (const StateArray& a : s.optimizer) {
    optimizer.write_dataset<float>(a.name, a.data);
    names.push_back(a.name);
  }
  optimizer.set_attr("names", h5::join_lines(names));
}

TrainerState read_state(const h5::Group& group, const std::vector<TensorInfo>& tensors) {
  TrainerState s;
  s.step = group.attr_int("step");
  s.updates = group.attr_int("updates");
  SB_CHECK(s.step >= 0 && s.updates >= 0 && s.updates <= s.step, group.where(), ": step ", s.step,
           " and updates ", s.updates, " are inconsistent (need 0 <= updates <= step)");
  s.cursor.epoch = group.attr_uint("cursor_epoch");
  s.cursor.position = group.attr_uint("cursor_position");
  s.loss_scale.scale = group.attr_double("loss_scale");
  s.loss_scale.good_steps = group.attr_int("loss_scale_good_steps");
  s.loss_scale.skipped_steps = group.attr_int("loss_scale_skipped_steps");
  s.experiment_id = group.attr_string("experiment_id");
  s.weights = read_params(group.group("params"), tensors);
  const h5::Group optimizer = group.group("optimizer");
  const uint64_t largest = flat_size(tensors);
  for (const std::string& name : h5::split_lines(optimizer.attr_string("names"))) {
    check_buffer_name(optimizer, name);
    const h5::Dataset d = optimizer.dataset(name);
    d.check(h5::DType::f32, {h5::kAny});
    SB_CHECK(d.rows() <= largest, d.where(), ": ", d.rows(), " values, more than the model's ", largest,
             " parameters");
    s.optimizer.push_back({name, d.read<float>()});
  }
  return s;
}

ResumePoint find_resume_point(const std::string& run_path, const RunHeader& header,
                              const std::function<void(const TrainerState&)>& accept) {
  const RunReader run = RunReader::open(run_path);
  SB_CHECK(run.info().experiment_id == header.experiment_id, "cannot resume '", run_path,
           "': it records experiment ", run.info().experiment_id, ", this configuration is experiment ",
           header.experiment_id, " (resume with the run's own configuration; its resolved text is the "
           "file's `config` attribute)");
  SB_CHECK(run.tensors() == header.tensors, "cannot resume '", run_path,
           "': its tensor table differs from this model's layout (different samebits version?)");
  ResumePoint point;
  if (run.info().status == Status::finished) {
    point.finished = true;
    point.step = run.steps_recorded();
    return point;
  }
  const std::vector<StoreEntry>& entries = run.store_entries();
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (!it->is_state()) continue;
    const std::string file = store_file(run_path, *it);
    try {
      const TrainerState state = read_store_state(file, *it, header.tensors);
      SB_CHECK(state.experiment_id == header.experiment_id, "it is of experiment ", state.experiment_id);
      if (state.step > 0) {
        const std::vector<uint64_t> recorded =
            run.series_rows<uint64_t>("series/param_fingerprint", uint64_t(state.step - 1), 1);
        for (std::size_t t = 0; t < header.tensors.size(); ++t) {
          const TensorInfo& info = header.tensors[t];
          SB_CHECK(det::fingerprint(state.weights.data() + info.offset, info.numel) == recorded[t],
                   "its parameters of ", info.name, " differ from the run file's fingerprint at step ", state.step);
        }
      }
      accept(state);
      point.step = state.step;
      point.source = file;
      return point;
    } catch (const Error& e) {
      point.notes.push_back("checkpoint " + file + " is not usable (" + e.what() +
                            "); falling back to the previous one");
    }
  }
  return point;
}

}  // namespace sb::run
