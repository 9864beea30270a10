// run_file.hpp: RunReader. A run file is untrusted input (artifact evaluation reads other people's
// files): the seal is checked before HDF5 sees the file, then every attribute, dataset dtype and
// shape, the tensor table and the step column, so later reads cannot go out of bounds.
#include <algorithm>
#include <cstring>
#include <set>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
#include "samebits/det/error.hpp"

namespace sb::run {
namespace {

// Bounds on what a file may claim before we allocate for it.
constexpr int64_t kMaxSteps = int64_t{1} << 32;
constexpr int64_t kMaxTensors = 1 << 20;
constexpr int64_t kMaxNumel = int64_t{1} << 34;

Status parse_status(const h5::Object& root, const std::string& text) {
  for (Status s : {Status::running, Status::finished, Status::failed}) {
    if (text == to_string(s)) return s;
  }
  SB_FAIL(root.where(), ": attribute status is '", text, "', expected running, finished or failed");
}

RunInfo read_info(const h5::File& f) {
  RunInfo i;
  const std::string format = f.attr_string("format");
  SB_CHECK(format == kRunFormat, f.file_name(), ": attribute format is '", format, "', expected '", kRunFormat,
           "' (not a samebits run file)");
  i.format_version = f.attr_int("format_version");
  SB_CHECK(i.format_version != 1, f.file_name(), ": a run file of format version 1 (samebits 0.1, which kept "
           "snapshots and the final state inside the run file); this samebits reads version ", kFormatVersion,
           ". h5py reads it as it is (docs/FORMAT.md, version 1); to inspect, diff or verify it here, train its "
           "experiment again with this samebits (its resolved config is the file's `config` attribute)");
  SB_CHECK(i.format_version == kFormatVersion, f.file_name(), ": run file format version ", i.format_version,
           "; this samebits reads version ", kFormatVersion);
  i.samebits_version = f.attr_string("samebits_version");
  i.samebits_commit = f.attr_string("samebits_commit");
  i.config_text = f.attr_string("config");
  i.experiment_id = f.attr_string("experiment_id");
  i.experiment_text = f.attr_string("experiment_text");
  i.steps = f.attr_int("steps");
  SB_CHECK(i.steps >= 1 && i.steps <= kMaxSteps, f.file_name(), ": attribute steps = ", i.steps,
           " is outside [1, 2^32]");
  i.status = parse_status(f, f.attr_string("status"));
  i.error = f.attr_string("error");
  i.execution.backend = f.attr_string("backend");
  i.execution.communicator = f.attr_string("communicator");
  i.execution.threads = f.attr_int("threads");
  i.execution.world_size = f.attr_int("world_size");
  i.execution.micro_leaves = f.attr_int("micro_leaves");
  i.compiler = f.attr_string("compiler");
  i.build_type = f.attr_string("build_type");
  i.fp_flags = f.attr_string("fp_flags");
  i.simd = f.attr_string("simd");
  i.fp_environment = f.attr_string("fp_environment");
  i.host = f.attr_string("host");
  i.time_started = f.attr_string("time_started");
  i.time_updated = f.attr_string("time_updated");
  i.time_sessions = f.attr_string("time_sessions");
  return i;
}

std::vector<int64_t> read_table_column(const h5::Group& g, const char* name, uint64_t rows, uint64_t cols) {
  const h5::Dataset d = g.dataset(name);
  d.check(h5::DType::i64, cols == 0 ? h5::Dims{rows} : h5::Dims{rows, cols});
  return d.read<int64_t>();
}

std::vector<TensorInfo> read_tensors(const h5::File& f) {
  const h5::Group g = f.group("tensors");
  const std::vector<std::string> names = h5::split_lines(g.attr_string("names"));
  const int64_t n = static_cast<int64_t>(names.size());
  SB_CHECK(n >= 1 && n <= kMaxTensors, g.where(), ": ", n, " tensor names; expected 1 to ", kMaxTensors);
  const auto offset = read_table_column(g, "offset", uint64_t(n), 0);
  const auto numel = read_table_column(g, "numel", uint64_t(n), 0);
  const auto rank = read_table_column(g, "rank", uint64_t(n), 0);
  const auto shape = read_table_column(g, "shape", uint64_t(n), 2);
  std::vector<TensorInfo> out;
  std::set<std::string> seen;
  int64_t end = 0;
  for (int64_t t = 0; t < n; ++t) {
    const std::string& name = names[size_t(t)];
    SB_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
                 seen.insert(name).second,
             g.where(), ": tensor name '", name, "' is empty, has a '/', or repeats");
    const int64_t r = rank[size_t(t)], d0 = shape[size_t(2 * t)], d1 = shape[size_t(2 * t + 1)];
    SB_CHECK((r == 1 || r == 2) && d0 >= 1 && d0 <= kMaxNumel && d1 >= 1 && d1 <= kMaxNumel / d0 &&
                 (r == 2 || d1 == 1) && d0 * d1 == numel[size_t(t)] && numel[size_t(t)] <= kMaxNumel,
             g.where(), ": tensor ", name, " has rank ", r, ", shape (", d0, ", ", d1, ") and ", numel[size_t(t)],
             " elements, which do not agree");
    SB_CHECK(offset[size_t(t)] >= end && offset[size_t(t)] % int64_t(kParamAlign) == 0 &&
                 offset[size_t(t)] <= kMaxNumel,
             g.where(), ": tensor ", name, " starts at ", offset[size_t(t)], ", expected a multiple of ",
             kParamAlign, " at or after ", end, " (tensors in order, not overlapping)");
    end = offset[size_t(t)] + numel[size_t(t)];
    TensorInfo info{name, r == 2 ? std::vector<int64_t>{d0, d1} : std::vector<int64_t>{d0},
                    uint64_t(offset[size_t(t)]), uint64_t(numel[size_t(t)])};
    out.push_back(std::move(info));
  }
  return out;
}

// Every column exists with its dtype and shape (rows, width); returns rows.
int64_t check_series(const h5::File& f, std::size_t tensors) {
  int64_t rows = -1;
  for (const SeriesColumn& c : series_columns()) {
    const h5::Dataset d = f.dataset(c.path);
    const uint64_t width = c.width == Width::tensors ? tensors : c.width == Width::collectives ? kCollectiveKinds : 0;
    d.check(c.dtype, width == 0 ? h5::Dims{h5::kAny} : h5::Dims{h5::kAny, width});
    const int64_t r = static_cast<int64_t>(d.rows());
    SB_CHECK(rows < 0 || r == rows, d.where(), ": ", r, " rows, but /", series_columns().front().path, " has ",
             rows);
    rows = r;
  }
  return rows;
}

}  // namespace

RunReader RunReader::open(const std::string& path) {
  check_seal(path);
  RunReader r;
  r.path_ = path;
  r.file_ = h5::File::open(path, h5::Mode::read_only);
  r.info_ = read_info(r.file_);
  r.tensors_ = read_tensors(r.file_);
  r.rows_ = check_series(r.file_, r.tensors_.size());
  SB_CHECK(r.rows_ <= r.info_.steps, path, ": ", r.rows_, " steps recorded of a run of ", r.info_.steps);
  const std::vector<int64_t> steps = r.series<int64_t>("series/step");
  for (int64_t i = 0; i < r.rows_; ++i) {
    SB_CHECK(steps[size_t(i)] == i + 1, path, ": /series/step row ", i, " holds ", steps[size_t(i)], ", expected ",
             i + 1);
  }
  r.entries_ = read_store_index(r.file_, r.rows_);
  if (r.info_.status == Status::finished) {
    SB_CHECK(r.rows_ == r.info_.steps && r.has_final_state(), path, ": status finished, but ", r.rows_, " of ",
             r.info_.steps, " steps are recorded", r.has_final_state() ? "" : " and the store has no final state");
  }
  return r;
}

const StoreEntry* RunReader::entry(int64_t step) const {
  for (const StoreEntry& e : entries_) {
    if (e.step == step) return &e;
  }
  return nullptr;
}

std::vector<int64_t> RunReader::snapshot_steps() const {
  std::vector<int64_t> steps;
  for (const StoreEntry& e : entries_) {
    if (e.is_snapshot()) steps.push_back(e.step);
  }
  return steps;
}

std::vector<int64_t> RunReader::state_steps() const {
  std::vector<int64_t> steps;
  for (const StoreEntry& e : entries_) {
    if (e.is_state()) steps.push_back(e.step);
  }
  return steps;
}

std::vector<float> RunReader::read_snapshot(int64_t step) const {
  const StoreEntry* e = entry(step);
  SB_CHECK(e != nullptr && e->is_snapshot(), path_, ": no snapshot of step ", step);
  return read_store_params(store_file(path_, *e), *e, tensors_);
}

TrainerState RunReader::read_state(int64_t step) const {
  const StoreEntry* e = entry(step);
  SB_CHECK(e != nullptr && e->is_state(), path_, ": no state of step ", step, " in its store");
  return read_store_state(store_file(path_, *e), *e, tensors_);
}

std::vector<std::byte> RunReader::series_bytes(const SeriesColumn& column) const {
  const auto as_bytes = [](const auto& values) {
    std::vector<std::byte> out(values.size() * sizeof(values[0]));
    if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
  };
  switch (column.dtype) {
    case h5::DType::f32: return as_bytes(series<float>(column.path));
    case h5::DType::f64: return as_bytes(series<double>(column.path));
    case h5::DType::i32: return as_bytes(series<int32_t>(column.path));
    case h5::DType::i64: return as_bytes(series<int64_t>(column.path));
    case h5::DType::u64: return as_bytes(series<uint64_t>(column.path));
    case h5::DType::u8: return as_bytes(series<uint8_t>(column.path));
  }
  SB_FAIL(path_, ": column ", column.path, " has an unknown dtype");
}

bool RunReader::has_final_state() const {
  const StoreEntry* e = entry(info_.steps);
  return info_.status == Status::finished && e != nullptr && e->is_state();
}

TrainerState RunReader::read_final_state() const {
  SB_CHECK(has_final_state(), path_, ": no final state (the run has not finished)");
  return read_state(info_.steps);
}

}  // namespace sb::run
