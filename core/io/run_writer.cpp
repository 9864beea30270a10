// run_file.hpp: RunWriter. The run file is only ever replaced whole: each commit reads it into
// memory, appends the pending rows and snapshots there (HDF5's core driver: HDF5 never writes to
// the disk), and writes the image with its seal to a temporary file, fsync, rename. After a kill
// at any moment the file is the complete result of the last commit, and a full disk is a plain
// write error; checkpoint files are written before the commit that relies on them and deleted
// only after the next one.
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/det/build_info.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fpenv.hpp"

namespace sb::run {
namespace {

namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

uint64_t column_width(const SeriesColumn& c, std::size_t tensors) {
  switch (c.width) {
    case Width::one: return 0;
    case Width::tensors: return tensors;
    case Width::collectives: return kCollectiveKinds;
  }
  return 0;
}

// About 4 KiB per chunk: small files for short runs, not too many chunks for long ones.
uint64_t chunk_rows(const SeriesColumn& c, std::size_t tensors) {
  const uint64_t row_bytes = h5::dtype_size(c.dtype) * std::max<uint64_t>(1, column_width(c, tensors));
  return std::max<uint64_t>(1, 4096 / row_bytes);
}

template <class T>
void append_typed(h5::Dataset& d, const std::vector<std::byte>& bytes) {
  if (bytes.empty()) return;
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  d.append_rows<T>(values);
}

void append_bytes(h5::Dataset& d, h5::DType dtype, const std::vector<std::byte>& bytes) {
  switch (dtype) {
    case h5::DType::f32: return append_typed<float>(d, bytes);
    case h5::DType::f64: return append_typed<double>(d, bytes);
    case h5::DType::i32: return append_typed<int32_t>(d, bytes);
    case h5::DType::i64: return append_typed<int64_t>(d, bytes);
    case h5::DType::u64: return append_typed<uint64_t>(d, bytes);
    case h5::DType::u8: return append_typed<uint8_t>(d, bytes);
  }
}

// The session's execution configuration, build and host (overwritten by every session).
void write_execution(h5::Group& root, const Execution& e) {
  root.set_attr("backend", e.backend);
  root.set_attr("communicator", e.communicator);
  root.set_attr("threads", e.threads);
  root.set_attr("world_size", e.world_size);
  root.set_attr("micro_leaves", e.micro_leaves);
  root.set_attr("compiler", build::kCompiler);
  root.set_attr("build_type", build::kBuildType);
  root.set_attr("fp_flags", build::kFpFlags);
  root.set_attr("simd", build::kSimd);
  root.set_attr("fp_environment", det::fp_environment_description());
  root.set_attr("samebits_version", build::kVersion);
  root.set_attr("samebits_commit", build::kGitCommit);
  root.set_attr("host", host_name());
}

void write_tensor_table(h5::Group& root, const std::vector<TensorInfo>& tensors) {
  h5::Group g = root.create_group("tensors");
  std::vector<std::string> names;
  std::vector<int64_t> offset, numel, rank, shape;
  for (const TensorInfo& t : tensors) {
    SB_CHECK(t.shape.size() == 1 || t.shape.size() == 2, "tensor ", t.name, " has rank ", t.shape.size(),
             "; run files record rank 1 and 2");
    names.push_back(t.name);
    offset.push_back(static_cast<int64_t>(t.offset));
    numel.push_back(static_cast<int64_t>(t.numel));
    rank.push_back(static_cast<int64_t>(t.shape.size()));
    shape.push_back(t.shape[0]);
    shape.push_back(t.shape.size() == 2 ? t.shape[1] : 1);
  }
  g.set_attr("names", h5::join_lines(names));
  const uint64_t n = tensors.size();
  g.write_dataset<int64_t>("offset", offset);
  g.write_dataset<int64_t>("numel", numel);
  g.write_dataset<int64_t>("rank", rank);
  g.write_dataset<int64_t>("shape", shape, {n, 2});
}

// Replaces the run file at `path` by its edited copy: the file is read into memory (after its
// seal is checked), edited there, and its image written and sealed atomically.
void rewrite(const std::string& path, const std::function<void(h5::File&)>& edit) {
  check_seal(path);
  std::vector<std::byte> image;
  {
    h5::File file = h5::File::open_in_memory(path);
    edit(file);
    image = file.image();
    file.close();
  }
  write_sealed_file(path, image);
}

// Temporary files of killed processes: "<run>.tmp.<pid>" and "<run>.ckpt/*.tmp.<pid>".
void remove_stale_temporaries(const std::string& path) {
  std::error_code ec;
  const fs::path run(path);
  const fs::path dir = run.parent_path().empty() ? fs::path(".") : run.parent_path();
  const std::string prefix = run.filename().string() + ".tmp.";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove(e.path(), ec);
  }
  for (const auto& e : fs::directory_iterator(checkpoint_dir(path), ec)) {
    if (e.path().filename().string().find(".h5.tmp.") != std::string::npos) fs::remove(e.path(), ec);
  }
}

}  // namespace

RunWriter::RunWriter(std::string path, RunHeader header, int64_t committed)
    : path_(std::move(path)), header_(std::move(header)), committed_(committed) {
  pending_.resize(series_columns().size());
}

RunWriter RunWriter::create(const std::string& path, const RunHeader& header) {
  std::error_code ec;
  SB_CHECK(!fs::exists(path, ec), "run file '", path, "' already exists; samebits never overwrites a run");
  SB_CHECK(fs::path(path).extension() != ".ckpt", "run file '", path,
           "' must not end in .ckpt (that names its checkpoint folder)");
  SB_CHECK(!header.tensors.empty(), "a run file needs the model's tensor layout");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    SB_CHECK(!ec, "cannot create the folder '", parent.string(), "' for the run file: ", ec.message());
  }
  remove_stale_temporaries(path);
  const std::string now = utc_now();
  std::vector<std::byte> image;
  {
    h5::File f = h5::File::create_in_memory(path);
    f.set_attr("format", kRunFormat);
    f.set_attr("format_version", kFormatVersion);
    f.set_attr("config", header.config_text);
    f.set_attr("experiment_id", header.experiment_id);
    f.set_attr("experiment_text", header.experiment_text);
    f.set_attr("steps", header.steps);
    f.set_attr("status", to_string(Status::running));
    f.set_attr("error", "");
    write_execution(f, header.execution);
    f.set_attr("time_started", now);
    f.set_attr("time_updated", now);
    f.set_attr("time_sessions", now + " start at step 0 on " + host_name());
    write_tensor_table(f, header.tensors);
    std::string kinds;  // the columns of comm_bytes and comm_calls
    for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
      kinds += (k ? "\n" : "") + std::string(to_string(static_cast<Collective>(k)));
    }
    for (const SeriesColumn& c : series_columns()) {
      h5::Dataset d = f.create_extendible(c.path, c.dtype, column_width(c, header.tensors.size()),
                                          chunk_rows(c, header.tensors.size()));
      if (c.width == Width::collectives) d.set_attr("columns", kinds);
    }
    image = f.image();
    f.close();
  }
  write_sealed_file(path, image);
  return RunWriter(path, header, 0);
}

RunWriter RunWriter::resume(const std::string& path, const RunHeader& header, int64_t step,
                            const std::string& note) {
  {
    const RunReader run = RunReader::open(path);
    SB_CHECK(run.info().experiment_id == header.experiment_id && run.tensors() == header.tensors,
             "cannot resume '", path, "': it records another experiment (", run.info().experiment_id, ")");
    SB_CHECK(step >= 0 && step <= run.steps_recorded(), "cannot resume '", path, "' at step ", step,
             ": it records ", run.steps_recorded(), " steps");
  }
  remove_stale_temporaries(path);
  const std::string now = utc_now();
  rewrite(path, [&](h5::File& f) {
    for (const SeriesColumn& c : series_columns()) f.dataset(c.path).truncate(uint64_t(step));
    if (f.is_group("snapshots")) {
      h5::Group snapshots = f.group("snapshots");
      for (const std::string& name : snapshots.names()) {
        if (snapshots.group(name).attr_int("step") > step) snapshots.remove(name);
      }
    }
    if (f.has("checkpoint")) f.remove("checkpoint");
    f.set_attr("status", to_string(Status::running));
    f.set_attr("error", "");
    f.set_attr("config", header.config_text);  // this session's run.* (the experiment is the same)
    f.set_attr("experiment_text", header.experiment_text);
    write_execution(f, header.execution);
    f.set_attr("time_updated", now);
    f.set_attr("time_sessions", f.attr_string("time_sessions") + "\n" + now + " resume at step " +
                                    std::to_string(step) + " on " + host_name() + ": " + note);
  });
  return RunWriter(path, header, step);
}

void RunWriter::record(const StepResult& r) {
  SB_CHECK(r.stats.step == steps_recorded() + 1, "run file '", path_, "': step ", r.stats.step,
           " recorded after step ", steps_recorded());
  const auto& columns = series_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) columns[i].append(r, header_.tensors.size(), pending_[i]);
  ++pending_rows_;
}

void RunWriter::snapshot(int64_t step, std::span<const float> flat_weights) {
  SB_CHECK(flat_weights.size() == flat_size(header_.tensors), "snapshot of ", flat_weights.size(),
           " values for a layout of ", flat_size(header_.tensors));
  snapshots_.emplace_back(step, std::vector<float>(flat_weights.begin(), flat_weights.end()));
}

std::size_t RunWriter::pending_bytes() const {
  std::size_t n = 0;
  for (const auto& p : pending_) n += p.size();
  for (const auto& s : snapshots_) n += s.second.size() * sizeof(float);
  return n;
}

void RunWriter::commit_file(Status status, const std::string& error, const TrainerState* final_state) {
  const std::string now = utc_now();
  rewrite(path_, [&](h5::File& f) {
    const auto& columns = series_columns();
    for (std::size_t i = 0; i < columns.size(); ++i) {
      h5::Dataset d = f.dataset(columns[i].path);
      append_bytes(d, columns[i].dtype, pending_[i]);
    }
    for (const auto& [step, weights] : snapshots_) {
      const std::string name = "snapshots/" + step_name(step);
      if (f.has(name)) f.remove(name);
      h5::Group g = f.create_group(name);
      g.set_attr("step", step);
      write_params(g, weights, header_.tensors);
    }
    if (final_state != nullptr) {
      if (f.has("checkpoint")) f.remove("checkpoint");
      h5::Group g = f.create_group("checkpoint");
      write_state(g, *final_state, header_.tensors);
    }
    f.set_attr("status", to_string(status));
    f.set_attr("error", error);
    f.set_attr("time_updated", now);
  });
  committed_ += pending_rows_;
  pending_rows_ = 0;
  for (auto& p : pending_) p.clear();
  snapshots_.clear();
}

void RunWriter::commit() { commit_file(Status::running, "", nullptr); }

void RunWriter::checkpoint(const TrainerState& state) {
  SB_CHECK(state.step == steps_recorded(), "checkpoint of step ", state.step, " while ", steps_recorded(),
           " steps are recorded");
  const fs::path dir = checkpoint_dir(path_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  SB_CHECK(!ec, "cannot create the checkpoint folder '", dir.string(), "': ", ec.message());
  const std::string file = checkpoint_file(path_, state.step);
  try {
    write_checkpoint_file(file, state, header_.tensors);
  } catch (const Error& e) {
    SB_FAIL("cannot write the checkpoint ", file, " (disk full?); the earlier checkpoints are intact: ", e.what());
  }
  commit();
  // Keep this checkpoint and the previous one; later ones (beyond a resume point) are replaced
  // when the run reaches them again.
  int64_t previous = -1;
  const std::vector<CheckpointEntry> entries = list_checkpoints(path_);
  for (const auto& e : entries) {
    if (e.step < state.step) previous = e.step;
  }
  for (const auto& e : entries) {
    if (e.step < previous) fs::remove(e.path, ec);
  }
}

void RunWriter::finish(const TrainerState& state) {
  SB_CHECK(state.step == header_.steps && steps_recorded() == header_.steps, "run file '", path_,
           "': finishing at step ", state.step, " with ", steps_recorded(), " steps recorded, expected ",
           header_.steps);
  commit_file(Status::finished, "", &state);
  std::error_code ec;
  fs::remove_all(checkpoint_dir(path_), ec);
}

void RunWriter::fail(const std::string& message) { commit_file(Status::failed, message, nullptr); }

}  // namespace sb::run
