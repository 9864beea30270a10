// run_file.hpp: RunReader. A run file is untrusted input (artifact evaluation reads other people's
// files): a reader process (isolated_read.hpp) checks the seal before HDF5 sees the file, then every
// attribute, dataset dtype, shape and storage against the schema, the tensor table and the step
// column, and hands back plain values; this process checks those values again (sizes, ranges,
// consistency) before anything uses them, so later reads cannot go out of bounds. Store files are
// read the same way (run_store.cpp).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <type_traits>

#include "read_values.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/h5_structure.hpp"
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

// Every field of RunInfo, in the order of the reader's answer.
template <class F>
void info_fields(RunInfo& i, F&& f) {
  f(i.format_version), f(i.samebits_version), f(i.samebits_commit), f(i.config_text), f(i.experiment_id);
  f(i.experiment_text), f(i.steps), f(i.status), f(i.error), f(i.execution.backend), f(i.execution.communicator);
  f(i.execution.threads), f(i.execution.world_size), f(i.execution.micro_leaves), f(i.compiler), f(i.build_type);
  f(i.fp_flags), f(i.simd), f(i.fp_environment), f(i.host), f(i.time_started), f(i.time_updated);
  f(i.time_sessions), f(i.execution.environment), f(i.data_files);
}

void check_info(const std::string& path, const RunInfo& i) {
  SB_CHECK(i.format_version == kFormatVersion, path, ": run file format version ", i.format_version,
           "; this samebits reads version ", kFormatVersion);
  SB_CHECK(i.steps >= 1 && i.steps <= kMaxSteps, path, ": attribute steps = ", i.steps, " is outside [1, 2^32]");
  SB_CHECK(i.status == Status::running || i.status == Status::finished || i.status == Status::failed, path,
           ": the reader's answer holds an unknown status");
}

RunInfo read_info(const h5::File& f) {
  RunInfo i;
  const std::string format = f.attr_string("format");
  SB_CHECK(format == kRunFormat, f.file_name(), ": attribute format is '", format, "', expected '", kRunFormat,
           "' (not a samebits run file)");
  i.format_version = f.attr_int("format_version");
  SB_CHECK(i.format_version != 1, f.file_name(),
           ": a run file of format version 1 (samebits 0.1, which kept "
           "snapshots and the final state inside the run file); this samebits reads version ",
           kFormatVersion,
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
  // Recorded since the data provenance and the environment were (absent in older version-2 files).
  if (f.has_attr("environment")) i.execution.environment = f.attr_string("environment");
  if (f.has_attr("data_files")) i.data_files = f.attr_string("data_files");
  check_info(f.file_name(), i);
  return i;
}

// The tensor table's invariants: names printable, unique and usable as dataset names; shapes,
// element counts and offsets agreeing, in order and not overlapping.
void check_tensors(const std::string& where, const std::vector<TensorInfo>& tensors) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  SB_CHECK(n >= 1 && n <= kMaxTensors, where, ": ", n, " tensor names; expected 1 to ", kMaxTensors);
  std::set<std::string> seen;
  int64_t end = 0;
  for (const TensorInfo& t : tensors) {
    const bool printable = std::all_of(t.name.begin(), t.name.end(), [](char c) { return c > ' ' && c < 127; });
    SB_CHECK(!t.name.empty() && t.name.size() <= 256 && printable && t.name.find('/') == std::string::npos &&
                 t.name != "." && t.name != ".." && seen.insert(t.name).second,
             where, ": tensor name '", t.name, "' is empty, not printable ASCII, has a '/', or repeats");
    const std::size_t r = t.shape.size();
    const int64_t d0 = r >= 1 ? t.shape[0] : 0, d1 = r == 2 ? t.shape[1] : 1;
    SB_CHECK((r == 1 || r == 2) && d0 >= 1 && d0 <= kMaxNumel && d1 >= 1 && d1 <= kMaxNumel / d0 &&
                 uint64_t(d0 * d1) == t.numel,
             where, ": tensor ", t.name, " has rank ", r, ", shape (", d0, ", ", d1, ") and ", t.numel,
             " elements, which do not agree");
    SB_CHECK(t.offset >= uint64_t(end) && t.offset % kParamAlign == 0 && t.offset <= uint64_t(kMaxNumel), where,
             ": tensor ", t.name, " starts at ", t.offset, ", expected a multiple of ", kParamAlign, " at or after ",
             end, " (tensors in order, not overlapping)");
    end = int64_t(t.offset + t.numel);
  }
}

// Reads a column of the table into a buffer of the schema's size.
std::vector<int64_t> read_table_column(const h5::Group& g, const char* name, uint64_t rows, uint64_t cols) {
  const h5::Dataset d = g.dataset(name);
  d.check(h5::DType::i64, cols == 0 ? h5::Dims{rows} : h5::Dims{rows, cols});
  std::vector<int64_t> out(rows * std::max<uint64_t>(cols, 1));
  d.read_into<int64_t>(out);
  return out;
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
  for (int64_t t = 0; t < n; ++t) {
    const std::size_t k = std::size_t(t);
    const int64_t r = rank[k], d0 = shape[2 * k], d1 = shape[2 * k + 1];
    SB_CHECK((r == 1 && d1 == 1) || r == 2, g.where(), ": tensor ", names[k], " has rank ", r, " and shape (", d0, ", ",
             d1, ")");
    SB_CHECK(offset[k] >= 0 && numel[k] >= 0, g.where(), ": tensor ", names[k], " has a negative offset or size");
    out.push_back({names[k], r == 2 ? std::vector<int64_t>{d0, d1} : std::vector<int64_t>{d0}, uint64_t(offset[k]),
                   uint64_t(numel[k])});
  }
  check_tensors(g.where(), out);
  return out;
}

// The file's row widths: the QK-clip columns are there (both, with /series/qk_max_logit's attribute
// n_head agreeing with the tensor table) or neither is.
SeriesShape read_shape(const h5::File& f, const std::vector<TensorInfo>& tensors) {
  int64_t n_head = 0;
  for (const SeriesColumn& c : series_columns()) {
    if (c.width != Width::heads || !f.has(c.path)) continue;
    const h5::Dataset d = f.dataset(c.path);
    n_head = d.attr_int("n_head");
    SB_CHECK(n_head >= 1, d.where(), ": attribute n_head = ", n_head, ", expected at least 1");
  }
  SeriesShape shape;
  try {
    shape = series_shape(tensors, n_head);
  } catch (const Error& e) {
    SB_FAIL(f.file_name(), ":/series/qk_max_logit: attribute n_head = ", n_head, ": ", e.what());
  }
  SB_CHECK(shape.heads <= uint64_t(kMaxTensors), f.file_name(), ":/series/qk_max_logit: ", shape.heads,
           " heads per step; expected at most ", kMaxTensors);
  for (const SeriesColumn& c : series_columns()) {
    SB_CHECK(!c.qk_clip || f.has(c.path) == (shape.heads > 0), f.file_name(), ":/", c.path,
             shape.heads > 0 ? " is missing, but /series/qk_max_logit records QK-clip maxima"
                             : " is present without /series/qk_max_logit (the QK-clip columns come together)");
    SB_CHECK(!c.moe || f.has(c.path) == (shape.experts > 0), f.file_name(), ":/", c.path,
             shape.experts > 0 ? " is missing, but the tensor table has Mixture-of-Experts routers"
                               : " is present, but the tensor table has no Mixture-of-Experts router");
  }
  SB_CHECK(shape.experts <= uint64_t(kMaxTensors) * 4096, f.file_name(), ": ", shape.experts,
           " routed experts per step");
  return shape;
}

// The dataset's row extent: 0 for a rank-1 column (Width::one), else its values per row.
uint64_t column_width(const SeriesColumn& c, const SeriesShape& shape) {
  return c.width == Width::one ? 0 : column_values(c, shape);
}

// Every recorded column exists with its dtype and shape (rows, width), rows <= steps; returns rows.
int64_t check_series(const h5::File& f, const SeriesShape& shape, int64_t steps) {
  int64_t rows = -1;
  for (const SeriesColumn& c : series_columns()) {
    if (!column_recorded(c, shape)) continue;
    const h5::Dataset d = f.dataset(c.path);
    const uint64_t width = column_width(c, shape);
    d.check(c.dtype, width == 0 ? h5::Dims{h5::kAny} : h5::Dims{h5::kAny, width});
    const int64_t r = static_cast<int64_t>(d.rows());
    SB_CHECK(rows < 0 || r == rows, d.where(), ": ", r, " rows, but /", series_columns().front().path, " has ", rows);
    rows = r;
  }
  SB_CHECK(rows <= steps, f.file_name(), ": ", rows, " steps recorded of a run of ", steps);
  return rows;
}

template <class T>
void read_column_as(const h5::Dataset& d, std::vector<std::byte>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  d.read_into<T>(values);
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
}

// The whole column into `bytes`, sized by the schema.
void read_column(const h5::Dataset& d, h5::DType dtype, std::vector<std::byte>& bytes) {
  h5::visit_element(dtype, [&](auto zero) { read_column_as<decltype(zero)>(d, bytes); });
}

// In the reader process: the whole structure, checked, and the values RunReader keeps.
void read_run(const std::string& path, ByteWriter& out) {
  check_seal(path);
  h5::check_structure(path, std::filesystem::file_size(path) - kSealBytes);
  const h5::File f = h5::File::open(path, h5::Mode::read_only);
  RunInfo info = read_info(f);
  const std::vector<TensorInfo> tensors = read_tensors(f);
  const SeriesShape shape = read_shape(f, tensors);
  const int64_t rows = check_series(f, shape, info.steps);
  info_fields(info, [&](auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) out.put_string(v);
    else out.put(v);
  });
  put_tensors(out, tensors);
  out.put(rows);
  out.put(uint64_t{shape.heads});
  out.put(uint64_t{shape.experts});
  out.put(uint64_t{shape.moe_blocks});
  for (const SeriesColumn& c : series_columns()) {
    std::vector<std::byte> bytes;
    if (column_recorded(c, shape)) {
      bytes.resize(uint64_t(rows) * column_values(c, shape) * dtype_bytes(c.dtype));
      read_column(f.dataset(c.path), c.dtype, bytes);
    }
    out.put_vector(bytes);
  }
  const std::vector<StoreEntry> entries = read_store_index(f, rows);
  out.put(uint64_t{entries.size()});
  for (const StoreEntry& e : entries) put_entry(out, e);
}

}  // namespace

std::vector<TensorInfo> get_tensors(ByteReader& in, uint64_t limit, const std::string& where) {
  const uint64_t n = in.get<uint64_t>();
  SB_CHECK(n <= limit, where, ": ", n, " tensors, more than ", limit);
  std::vector<TensorInfo> tensors;
  for (uint64_t t = 0; t < n; ++t) {
    TensorInfo info;
    info.name = in.get_string();
    info.shape = in.get_vector<int64_t>();
    info.offset = in.get<uint64_t>();
    info.numel = in.get<uint64_t>();
    tensors.push_back(std::move(info));
  }
  return tensors;
}

void read_run_kind(const std::string& path, ByteReader& params, ByteWriter& answer) {
  params.finish();
  read_run(path, answer);
}

RunReader RunReader::open(const std::string& path) {
  const std::vector<std::byte> answer = io::read_isolated("run", path);
  ByteReader in = io::answer_reader(answer, path);
  RunReader r;
  r.path_ = path;
  info_fields(r.info_, [&](auto& v) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::string>) v = in.get_string();
    else v = in.get<T>();
  });
  check_info(path, r.info_);
  r.tensors_ = get_tensors(in, uint64_t(kMaxTensors), path);
  SB_CHECK(!r.tensors_.empty(), path, ": 0 tensors");
  check_tensors(path + ":/tensors", r.tensors_);
  r.rows_ = in.get<int64_t>();
  SB_CHECK(r.rows_ >= 0 && r.rows_ <= r.info_.steps, path, ": ", r.rows_, " steps recorded of a run of ",
           r.info_.steps);
  r.shape_.tensors = r.tensors_.size();
  r.shape_.heads = std::size_t(in.get<uint64_t>());
  r.shape_.experts = std::size_t(in.get<uint64_t>());
  r.shape_.moe_blocks = std::size_t(in.get<uint64_t>());
  SB_CHECK(r.shape_.heads <= uint64_t(kMaxTensors), path, ": ", r.shape_.heads, " QK-clip heads per step");
  SB_CHECK(r.shape_.experts <= uint64_t(kMaxTensors) * 4096 && r.shape_.moe_blocks <= r.shape_.experts, path, ": ",
           r.shape_.experts, " routed experts in ", r.shape_.moe_blocks, " MoE blocks per step");
  for (const SeriesColumn& c : series_columns()) {
    const uint64_t width = column_recorded(c, r.shape_) ? column_values(c, r.shape_) : 0;
    r.series_.push_back(in.get_vector<std::byte>());
    SB_CHECK(r.series_.back().size() == uint64_t(r.rows_) * width * dtype_bytes(c.dtype), path, ": /", c.path,
             " came back with ", r.series_.back().size(), " bytes for ", r.rows_, " rows of ", width);
  }
  const std::vector<int64_t> steps = r.series<int64_t>("series/step");
  for (int64_t i = 0; i < r.rows_; ++i) {
    SB_CHECK(steps[size_t(i)] == i + 1, path, ": /series/step row ", i, " holds ", steps[size_t(i)], ", expected ",
             i + 1);
  }
  const uint64_t entries = in.get<uint64_t>();
  SB_CHECK(entries <= uint64_t(r.rows_) + 1, path, ": ", entries, " store files for ", r.rows_, " recorded steps");
  for (uint64_t k = 0; k < entries; ++k) {
    const StoreEntry e = get_entry(in);
    SB_CHECK(e.step >= 0 && e.step <= r.rows_ && (k == 0 || e.step > r.entries_.back().step) && e.kind != 0 &&
                 (e.kind & ~(kSnapshotBit | kStateBit | kKeptBit)) == 0,
             path, ": store index entry ", k, " (step ", e.step, ", kind ", int(e.kind),
             ") is out of order, beyond the ", r.rows_, " recorded steps or of an unknown kind");
    r.entries_.push_back(e);
  }
  in.finish();
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

bool RunReader::has_final_state() const {
  const StoreEntry* e = entry(info_.steps);
  return info_.status == Status::finished && e != nullptr && e->is_state();
}

const std::vector<std::byte>& RunReader::column_rows(std::string_view column, h5::DType dtype, uint64_t first,
                                                     uint64_t count) const {
  const auto& columns = series_columns();
  for (std::size_t k = 0; k < columns.size(); ++k) {
    if (columns[k].path != column) continue;
    SB_CHECK(column_recorded(columns[k], shape_), path_, ": the run does not record ", column,
             " (a QK-clip column: only runs with optim.qk_clip > 0 have it)");
    SB_CHECK(columns[k].dtype == dtype, path_, ": column ", column, " holds ", dtype_name(columns[k].dtype),
             ", read as ", dtype_name(dtype));
    SB_CHECK(first <= uint64_t(rows_) && count <= uint64_t(rows_) - first, path_, ": rows [", first, ", ", first, "+",
             count, ") of ", column, " are outside the ", rows_, " recorded");
    return series_[k];
  }
  SB_FAIL(path_, ": no series column ", column);
}

std::vector<std::byte> RunReader::series_bytes(const SeriesColumn& column) const {
  return column_rows(column.path, column.dtype, 0, uint64_t(rows_));
}

const TrainerState& RunReader::read_final_state() const {
  SB_CHECK(has_final_state(), path_, ": no final state (the run has not finished)");
  if (!final_state_read_) final_state_read_ = read_state(info_.steps);
  return *final_state_read_;
}

}  // namespace sb::run
