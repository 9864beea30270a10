// run_file.hpp: RunWriter. Snapshots and states go to their own store files (run_store.hpp), each
// written once before the commit that indexes it. The run file — rows and index, no parameters —
// is only ever replaced whole: each commit reads it into memory, appends the pending rows and
// writes the index there (HDF5's core driver: HDF5 never writes to the disk), and writes the image
// with its seal to a temporary file, fsync, rename. After a kill at any moment the run file is the
// complete result of the last commit and names only complete files; a full disk is a plain write
// error; a store file leaves the index before it is deleted.
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>

#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/h5_structure.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"
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

// The dataset's row extent: 0 for a rank-1 column (Width::one), else its values per row.
uint64_t column_width(const SeriesColumn& c, const SeriesShape& shape) {
  return c.width == Width::one ? 0 : column_values(c, shape);
}

// About 4 KiB per chunk: small files for short runs, not too many chunks for long ones.
uint64_t chunk_rows(const SeriesColumn& c, const SeriesShape& shape) {
  const uint64_t row_bytes = dtype_bytes(c.dtype) * column_values(c, shape);
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
  h5::visit_element(dtype, [&](auto zero) { append_typed<decltype(zero)>(d, bytes); });
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
  root.set_attr("environment", e.environment);
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
// seal is checked), edited there, and its image written and sealed atomically. Returns the bytes
// written.
uint64_t rewrite(const std::string& path, const std::function<void(h5::File&)>& edit) {
  check_seal(path);
  h5::check_structure(path, fs::file_size(path) - kSealBytes);
  std::vector<std::byte> image;
  {
    h5::File file = h5::File::open_in_memory(path);
    edit(file);
    image = file.image();
    file.close();
  }
  write_sealed_file(path, image);
  return image.size() + kSealBytes;
}

// Temporary files of killed processes beside the run file: "<run>.tmp.<pid>".
void remove_stale_temporaries(const std::string& path) {
  std::error_code ec;
  const fs::path run(path);
  const fs::path dir = run.parent_path().empty() ? fs::path(".") : run.parent_path();
  const std::string prefix = run.filename().string() + ".tmp.";
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove(p, ec);
}

}  // namespace

RunWriter::RunWriter(std::string path, RunHeader header, int64_t committed, std::vector<StoreEntry> entries)
    : path_(std::move(path)),
      header_(std::move(header)),
      shape_(series_shape(header_.tensors, header_.qk_n_head)),
      committed_(committed),
      entries_(std::move(entries)) {
  pending_.resize(series_columns().size());
}

RunWriter RunWriter::create(const std::string& path, const RunHeader& header) {
  std::error_code ec;
  SB_CHECK(!fs::exists(path, ec), "run file '", path, "' already exists; samebits never overwrites a run");
  SB_CHECK(fs::path(path).extension() != ".store", "run file '", path,
           "' must not end in .store (that names its store folder)");
  SB_CHECK(!header.tensors.empty(), "a run file needs the model's tensor layout");
  const fs::path store = store_dir(path);
  SB_CHECK(!fs::exists(store, ec) || (fs::is_directory(store, ec) && fs::is_empty(store, ec)), "the store folder '",
           store.string(), "' of the new run file '", path,
           "' already exists and is not empty (left by a run whose "
           "run file was removed?); samebits never overwrites a run: remove it or choose another --out");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    SB_CHECK(!ec, "cannot create the folder '", parent.string(), "' for the run file: ", ec.message());
  }
  fs::create_directories(store, ec);
  SB_CHECK(!ec, "cannot create the store folder '", store.string(), "': ", ec.message());
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
    f.set_attr("data_files", header.data_files);
    f.set_attr("status", to_string(Status::running));
    f.set_attr("error", "");
    write_execution(f, header.execution);
    f.set_attr("time_started", now);
    f.set_attr("time_updated", now);
    f.set_attr("time_sessions", now + " start at step 0 on " + host_name() + ", " + header.execution.layout);
    write_tensor_table(f, header.tensors);
    std::string kinds;  // the columns of comm_bytes and comm_calls
    for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
      kinds += (k ? "\n" : "") + std::string(to_string(static_cast<Collective>(k)));
    }
    const SeriesShape shape = series_shape(header.tensors, header.qk_n_head);
    for (const SeriesColumn& c : series_columns()) {
      if (!column_recorded(c, shape)) continue;
      h5::Dataset d = f.create_extendible(c.path, c.dtype, column_width(c, shape), chunk_rows(c, shape));
      if (c.width == Width::collectives) d.set_attr("columns", kinds);
      if (c.width == Width::heads) d.set_attr("n_head", header.qk_n_head);
    }
    write_store_index(f, path, {}, -1);
    image = f.image();
    f.close();
  }
  write_sealed_file(path, image);
  RunWriter w(path, header, 0, {});
  w.bytes_written_ = image.size() + kSealBytes;
  return w;
}

RunWriter RunWriter::resume(const std::string& path, const RunHeader& header, int64_t step, const std::string& note) {
  std::vector<StoreEntry> kept, dropped;
  const SeriesShape shape = series_shape(header.tensors, header.qk_n_head);
  {
    const RunReader run = RunReader::open(path);
    SB_CHECK(run.info().experiment_id == header.experiment_id && run.tensors() == header.tensors &&
                 run.shape().heads == shape.heads && run.shape().experts == shape.experts,
             "cannot resume '", path, "': it records another experiment (", run.info().experiment_id, ")");
    SB_CHECK(step >= 0 && step <= run.steps_recorded(), "cannot resume '", path, "' at step ", step, ": it records ",
             run.steps_recorded(), " steps");
    for (const StoreEntry& e : run.store_entries()) (e.step <= step ? kept : dropped).push_back(e);
  }
  remove_stale_temporaries(path);
  const std::string now = utc_now();
  const uint64_t bytes = rewrite(path, [&](h5::File& f) {
    for (const SeriesColumn& c : series_columns()) {
      if (column_recorded(c, shape)) f.dataset(c.path).truncate(uint64_t(step));
    }
    write_store_index(f, path, kept, -1);
    f.set_attr("status", to_string(Status::running));
    f.set_attr("error", "");
    f.set_attr("config", header.config_text);  // this session's run.* (the experiment is the same)
    f.set_attr("experiment_text", header.experiment_text);
    write_execution(f, header.execution);
    f.set_attr("time_updated", now);
    f.set_attr("time_sessions", f.attr_string("time_sessions") + "\n" + now + " resume at step " +
                                    std::to_string(step) + " on " + host_name() + ", " + header.execution.layout +
                                    ": " + note);
  });
  remove_unindexed_files(path, kept);  // the dropped entries' files and those never indexed
  RunWriter w(path, header, step, std::move(kept));
  w.bytes_written_ = bytes;
  return w;
}

void RunWriter::record(const StepResult& r) {
  SB_CHECK(r.stats.step == steps_recorded() + 1, "run file '", path_, "': step ", r.stats.step, " recorded after step ",
           steps_recorded());
  SB_CHECK(r.stats.qk_max_logits.size() == shape_.heads, "run file '", path_, "': step ", r.stats.step, " has ",
           r.stats.qk_max_logits.size(), " QK-clip maxima, the file records ", shape_.heads, " per step");
  SB_CHECK(r.stats.moe_tokens.size() == shape_.experts && r.stats.moe_bias.size() == shape_.experts &&
               r.stats.moe_aux_loss.size() == shape_.moe_blocks && r.stats.moe_entropy.size() == shape_.moe_blocks &&
               r.stats.moe_route_flips.size() == shape_.moe_blocks,
           "run file '", path_, "': step ", r.stats.step, " has ", r.stats.moe_tokens.size(), " expert selections and ",
           r.stats.moe_aux_loss.size(), " MoE blocks, the file records ", shape_.experts, " and ", shape_.moe_blocks,
           " per step");
  const auto& columns = series_columns();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (column_recorded(columns[i], shape_)) columns[i].append(r, header_.tensors.size(), pending_[i]);
  }
  ++pending_rows_;
  wait_store();  // a store file started after the previous step lands with this step's row
}

void RunWriter::add_entry(const StoreEntry& entry) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), entry.step,
                             [](const StoreEntry& e, int64_t step) { return e.step < step; });
  if (it != entries_.end() && it->step == entry.step) {
    if (it->is_state() != entry.is_state()) unlinked_.push_back(store_file(path_, *it));
    *it = entry;
  } else {
    entries_.insert(it, entry);
  }
}

void RunWriter::drop_entries(const std::function<bool(const StoreEntry&)>& drop) {
  std::vector<StoreEntry> stay;
  for (const StoreEntry& e : entries_) {
    if (drop(e)) unlinked_.push_back(store_file(path_, e));
    else stay.push_back(e);
  }
  entries_ = std::move(stay);
}

void RunWriter::start_store(std::function<StoreEntry()> write, StoreJob job, bool background) {
  SB_CHECK(!job_, "run file '", path_, "': a store file is still being written");
  background = background && background_;
  if (background) {
    job.write = std::async(std::launch::async, std::move(write));
  } else {
    std::promise<StoreEntry> done;
    done.set_value(write());
    job.write = done.get_future();
  }
  job_ = std::move(job);
  if (!background) wait_store();
}

void RunWriter::wait_store() {
  if (!job_) return;
  StoreJob job = std::move(*job_);
  job_.reset();
  StoreEntry entry = job.write.get();             // a failed write throws here, after job_ is cleared
  if (job.state) spare_ = std::move(*job.state);  // the write is complete: its buffers are free
  if (job.weights && spare_.weights.empty()) spare_.weights = std::move(*job.weights);
  entry.kind |= job.kind;
  for (const StoreEntry& e : entries_) {  // a snapshot of this step is served by the state now
    if (e.step == entry.step && entry.is_state()) entry.kind |= e.kind & kSnapshotBit;
  }
  land_store(entry);
  if (job.commit) commit();
}

void RunWriter::land_store(StoreEntry entry) {
  bytes_written_ += entry.bytes;
  add_entry(entry);
  if (!entry.is_state()) return;
  // Keep this state and the previous one; older states go unless kept for good or snapshots.
  int64_t previous = -1;
  for (const StoreEntry& e : entries_) previous = e.is_state() && e.step < entry.step ? e.step : previous;
  drop_entries([&](const StoreEntry& e) { return e.kind == kStateBit && e.step < previous; });
}

void RunWriter::snapshot(int64_t step, const std::function<std::vector<float>()>& flat_weights) {
  if (job_ && job_->step == step) {  // the state of this step, being written, serves as the snapshot
    job_->kind |= kSnapshotBit;
    return;
  }
  wait_store();
  for (StoreEntry& e : entries_) {
    if (e.step != step) continue;
    e.kind |= kSnapshotBit;  // a state of this step, or this snapshot itself, already in the store
    return;
  }
  auto weights = std::make_shared<std::vector<float>>(flat_weights());
  SB_CHECK(weights->size() == flat_size(header_.tensors), "snapshot of ", weights->size(), " values for a layout of ",
           flat_size(header_.tensors));
  const std::string file = store_file(path_, StoreEntry{step, kSnapshotBit, 0, 0});
  StoreJob job;
  job.step = step;
  job.weights = weights;
  start_store([file, step, id = header_.experiment_id, tensors = header_.tensors,
               weights] { return write_snapshot_file(file, step, id, *weights, tensors); },
              std::move(job));
}

std::size_t RunWriter::pending_bytes() const {
  std::size_t n = 0;
  for (const auto& p : pending_) n += p.size();
  return n;
}

void RunWriter::commit_file(Status status, const std::string& error, int64_t final_step) {
  const std::string now = utc_now();
  bytes_written_ += rewrite(path_, [&](h5::File& f) {
    const auto& columns = series_columns();
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (!column_recorded(columns[i], shape_)) continue;
      h5::Dataset d = f.dataset(columns[i].path);
      append_bytes(d, columns[i].dtype, pending_[i]);
    }
    write_store_index(f, path_, entries_, final_step);
    f.set_attr("status", to_string(status));
    f.set_attr("error", error);
    f.set_attr("time_updated", now);
    if (steps_set_) f.set_attr("steps", header_.steps);
  });
  committed_ += pending_rows_;
  pending_rows_ = 0;
  for (auto& p : pending_) p.clear();
  std::error_code ec;
  for (const std::string& file : unlinked_) fs::remove(file, ec);  // no longer named by the run file
  unlinked_.clear();
}

void RunWriter::commit() {
  wait_store();
  commit_file(Status::running, "", -1);
}

void RunWriter::store_state(int64_t step, bool keep, bool commit, std::shared_ptr<TrainerState> held,
                            const std::function<StoreEntry(const std::string&)>& write) {
  wait_store();
  SB_CHECK(step == steps_recorded(), "checkpoint of step ", step, " while ", steps_recorded(), " steps are recorded");
  const uint8_t kept = keep ? kKeptBit : 0;
  for (StoreEntry& e : entries_) {
    if (e.step != step || !e.is_state()) continue;
    e.kind |= kept;  // the store holds this state already
    if (commit) this->commit();
    return;
  }
  const std::string file = store_file(path_, StoreEntry{step, kStateBit, 0, 0});
  StoreJob job;
  job.step = step;
  job.kind = kept;
  job.commit = commit;
  job.state = held;
  start_store(
      [file, write] {
        try {
          return write(file);
        } catch (const Error& e) {
          SB_FAIL("cannot write the checkpoint ", file,
                  " (disk full?); the earlier checkpoints are intact: ", e.what());
        }
      },
      std::move(job), held != nullptr);
}

void RunWriter::store_state(TrainerState state, bool keep, bool commit) {
  const int64_t step = state.step;
  auto held = std::make_shared<TrainerState>(std::move(state));
  store_state(step, keep, commit, held, [held, tensors = header_.tensors](const std::string& file) {
    return write_state_file(file, *held, tensors);
  });
}

void RunWriter::store_state(const TrainerState& head, const StateParts& parts, bool keep, bool commit) {
  store_state(head.step, keep, commit, nullptr,
              [&](const std::string& file) { return write_state_file(file, head, parts, header_.tensors); });
}

void RunWriter::checkpoint(TrainerState state, bool keep) { store_state(std::move(state), keep, true); }

void RunWriter::checkpoint(const TrainerState& head, const StateParts& parts, bool keep) {
  store_state(head, parts, keep, true);
}

void RunWriter::finish(TrainerState state, bool snapshot) {
  const int64_t step = state.step;
  finish_at(step, snapshot, [&] { store_state(std::move(state), true, false); });
}

void RunWriter::finish(const TrainerState& head, const StateParts& parts, bool snapshot) {
  finish_at(head.step, snapshot, [&] { store_state(head, parts, true, false); });
}

void RunWriter::finish_at(int64_t step, bool snapshot, const std::function<void()>& store) {
  SB_CHECK(step == header_.steps && steps_recorded() == header_.steps, "run file '", path_, "': finishing at step ",
           step, " with ", steps_recorded(), " steps recorded, expected ", header_.steps);
  store();  // the final state, kept; written unless the store holds it
  wait_store();
  if (snapshot) {
    for (StoreEntry& e : entries_) e.kind |= e.step == step ? kSnapshotBit : 0;
  }
  drop_entries([](const StoreEntry& e) { return e.kind == kStateBit; });  // the rolling states
  commit_file(Status::finished, "", step);
}

void RunWriter::set_steps(int64_t steps) {
  SB_CHECK(steps >= 1 && steps >= steps_recorded(), "run file '", path_, "': ", steps, " steps with ", steps_recorded(),
           " recorded");
  header_.steps = steps;
  steps_set_ = true;
}

void RunWriter::fail(const std::string& message) {
  std::string why = message;
  try {
    wait_store();
  } catch (const Error& e) {
    why += "; " + std::string(e.what());
  }
  commit_file(Status::failed, why, -1);
}

}  // namespace sb::run
