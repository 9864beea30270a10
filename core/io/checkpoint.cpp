// checkpoint.hpp: checkpoint groups and files, their folder, and the choice of the resume point.
// Every value read back is checked (dtype, shape, ranges) before use, in a reader process
// (isolated_read.hpp) and again when its answer arrives; a bad checkpoint is an sb::Error that
// find_resume_point turns into a note and a fall-back to the previous state.
#include "samebits/core/io/checkpoint.hpp"

#include <algorithm>
#include <sstream>

#include "read_values.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::run {
namespace {

h5::Dims dims_of(const std::vector<int64_t>& shape) { return h5::Dims(shape.begin(), shape.end()); }

// An f32 dataset of `count` values reserved in the file; its bytes (from `data` or, when it is
// null, from `fetch`) go to `raw`.
void reserve_floats(h5::Group& group, const std::string& name, uint64_t count, const float* data,
                    std::function<const void*()> fetch, const h5::Dims& shape, std::vector<RawWrite>& raw) {
  const h5::Dataset d = group.reserve_dataset(name, h5::DType::f32, shape);
  if (count > 0) raw.push_back({d.file_offset(), data, count * sizeof(float), data ? nullptr : std::move(fetch)});
}

// An optimizer buffer name is "<tensor>/<kind>": components non-empty, not "." or "..".
// Printable ASCII only: the names are written by samebits from tensor names and kinds.
void check_buffer_name(const std::string& where, const std::string& name) {
  SB_CHECK(!name.empty() && name.front() != '/' && name.back() != '/' && name.size() <= 256, where,
           ": optimizer buffer name '", name, "' is not of the form <tensor>/<kind>");
  for (const char c : name) {
    SB_CHECK(c > ' ' && c < 127, where, ": optimizer buffer name '", name, "' has a byte outside printable ASCII");
  }
  std::istringstream parts(name);
  std::string part;
  while (std::getline(parts, part, '/')) {
    SB_CHECK(!part.empty() && part != "." && part != "..", where, ": optimizer buffer name '", name,
             "' has an empty, '.' or '..' component");
  }
}

void check_counters(const std::string& where, int64_t step, int64_t updates) {
  SB_CHECK(step >= 0 && updates >= 0 && updates <= step, where, ": step ", step, " and updates ", updates,
           " are inconsistent (need 0 <= updates <= step)");
}

}  // namespace

void write_params(h5::Group& group, std::span<const float> flat, const std::vector<TensorInfo>& tensors,
                  std::vector<RawWrite>& raw) {
  SB_CHECK(flat.size() == flat_size(tensors), "parameters of ", flat.size(), " values given for a layout of ",
           flat_size(tensors));
  for (const TensorInfo& t : tensors)
    reserve_floats(group, t.name, t.numel, flat.data() + t.offset, {}, dims_of(t.shape), raw);
}

std::vector<float> read_params(const h5::Group& group, const std::vector<TensorInfo>& tensors) {
  std::vector<float> flat(flat_size(tensors), 0.0f);
  for (const TensorInfo& t : tensors) {
    const h5::Dataset d = group.dataset(t.name);
    d.check(h5::DType::f32, dims_of(t.shape));
    d.read_into<float>(std::span<float>(flat).subspan(t.offset, t.numel));
  }
  return flat;
}

namespace {
// The state's attributes and groups: `params` reserves the parameters' datasets, `array` the
// optimizer array i of `names`.
void write_state_groups(h5::Group& group, const TrainerState& s, const std::vector<std::string>& names,
                        const std::function<void(h5::Group&)>& params,
                        const std::function<void(h5::Group&, size_t)>& array) {
  group.set_attr("step", s.step);
  group.set_attr("updates", s.updates);
  group.set_attr("cursor_epoch", s.cursor.epoch);
  group.set_attr("cursor_position", s.cursor.position);
  group.set_attr("loss_scale", s.loss_scale.scale);
  group.set_attr("loss_scale_good_steps", s.loss_scale.good_steps);
  group.set_attr("loss_scale_skipped_steps", s.loss_scale.skipped_steps);
  group.set_attr("experiment_id", s.experiment_id);
  h5::Group params_group = group.create_group("params");
  params(params_group);
  h5::Group optimizer = group.create_group("optimizer");
  for (size_t i = 0; i < names.size(); ++i) array(optimizer, i);
  optimizer.set_attr("names", h5::join_lines(names));
}
}  // namespace

void write_state(h5::Group& group, const TrainerState& s, const std::vector<TensorInfo>& tensors,
                 std::vector<RawWrite>& raw) {
  std::vector<std::string> names;
  for (const StateArray& a : s.optimizer) names.push_back(a.name);
  write_state_groups(
      group, s, names, [&](h5::Group& params) { write_params(params, s.weights, tensors, raw); },
      [&](h5::Group& optimizer, size_t i) {
        const StateArray& a = s.optimizer[i];
        reserve_floats(optimizer, a.name, a.data.size(), a.data.data(), {}, {a.data.size()}, raw);
      });
}

void write_state(h5::Group& group, const TrainerState& head, const StateParts& parts,
                 const std::vector<TensorInfo>& tensors, std::vector<RawWrite>& raw) {
  SB_CHECK(parts.tensors == tensors.size() && parts.names.size() == parts.sizes.size(), "a state of ", parts.tensors,
           " tensors given for a layout of ", tensors.size());
  write_state_groups(
      group, head, parts.names,
      [&](h5::Group& params) {
        for (size_t t = 0; t < tensors.size(); ++t)
          reserve_floats(
              params, tensors[t].name, tensors[t].numel, nullptr, [&parts, t] { return parts.weights(t); },
              dims_of(tensors[t].shape), raw);
      },
      [&](h5::Group& optimizer, size_t i) {
        reserve_floats(
            optimizer, parts.names[i], parts.sizes[i], nullptr, [&parts, i] { return parts.array(i); },
            {parts.sizes[i]}, raw);
      });
}

TrainerState read_state(const h5::Group& group, const std::vector<TensorInfo>& tensors) {
  TrainerState s;
  s.step = group.attr_int("step");
  s.updates = group.attr_int("updates");
  check_counters(group.where(), s.step, s.updates);
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
    check_buffer_name(optimizer.where(), name);
    const h5::Dataset d = optimizer.dataset(name);
    d.check(h5::DType::f32, {h5::kAny});
    SB_CHECK(d.rows() <= largest, d.where(), ": ", d.rows(), " values, more than the model's ", largest, " parameters");
    std::vector<float> data(d.rows());
    d.read_into<float>(data);
    s.optimizer.push_back({name, std::move(data)});
  }
  return s;
}

void put_state(ByteWriter& out, const TrainerState& s) {
  out.put(s.step);
  out.put(s.updates);
  out.put(s.cursor.epoch);
  out.put(s.cursor.position);
  out.put(s.loss_scale.scale);
  out.put(s.loss_scale.good_steps);
  out.put(s.loss_scale.skipped_steps);
  out.put_string(s.experiment_id);
  out.put_vector(s.weights);
  out.put(uint64_t{s.optimizer.size()});
  for (const StateArray& a : s.optimizer) {
    out.put_string(a.name);
    out.put_vector(a.data);
  }
}

TrainerState get_state(ByteReader& in, const std::vector<TensorInfo>& tensors, const std::string& where) {
  TrainerState s;
  s.step = in.get<int64_t>();
  s.updates = in.get<int64_t>();
  check_counters(where, s.step, s.updates);
  s.cursor.epoch = in.get<uint64_t>();
  s.cursor.position = in.get<uint64_t>();
  s.loss_scale.scale = in.get<double>();
  s.loss_scale.good_steps = in.get<int64_t>();
  s.loss_scale.skipped_steps = in.get<int64_t>();
  s.experiment_id = in.get_string();
  s.weights = in.get_vector<float>();
  const uint64_t largest = flat_size(tensors);
  SB_CHECK(s.weights.size() == largest, where, ": ", s.weights.size(), " parameters for a layout of ", largest);
  const uint64_t buffers = in.get<uint64_t>();
  for (uint64_t k = 0; k < buffers; ++k) {
    StateArray a;
    a.name = in.get_string();
    check_buffer_name(where, a.name);
    a.data = in.get_vector<float>();
    SB_CHECK(a.data.size() <= largest, where, ": optimizer buffer ", a.name, " of ", a.data.size(),
             " values, more than the model's ", largest, " parameters");
    s.optimizer.push_back(std::move(a));
  }
  return s;
}

ResumePoint find_resume_point(const std::string& run_path, const RunHeader& header,
                              const std::function<void(const TrainerState&)>& accept) {
  const RunReader run = RunReader::open(run_path);
  SB_CHECK(run.info().experiment_id == header.experiment_id, "cannot resume '", run_path, "': it records experiment ",
           run.info().experiment_id, ", this configuration is experiment ", header.experiment_id,
           " (resume with the run's own configuration; its resolved text is the "
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
