// run_store.hpp: the store files beside the run file and the run file's index of them. Each store
// file is written once through HDF5 into its temporary file (its space reserved first), sealed,
// fsynced and renamed; its content hash goes into the index, so a later read accepts exactly the
// file that was committed.
#include "samebits/core/io/run_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <utility>

#include "posix_file.hpp"
#include "read_values.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/h5_structure.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/store_data.hpp"
#include "samebits/det/error.hpp"

namespace sb::run {
namespace {

namespace fs = std::filesystem;

constexpr uint8_t kKnownBits = kSnapshotBit | kStateBit | kKeptBit;

// Reserves `bytes` of disk for the file at `path` (posix_fallocate), so that a full disk (or a
// file-size limit) is a plain error here, before HDF5 writes: HDF5 1.10 is not safe after a failed
// write. HDF5 trims the file to its content when it closes it.
void reserve_space(const std::string& path, uint64_t bytes) {
  const Fd f(path, O_WRONLY);
  const int rc = ::posix_fallocate(f.fd, 0, static_cast<off_t>(bytes));
  SB_CHECK(rc == 0, "cannot write '", path, "': ", std::strerror(rc), " (disk full?)");
}

// HDF5 keeps the preallocated tail when it closes the file: cut the file back to HDF5's end of
// file, which a version-0 superblock (what File::create writes) records at byte 40. Its length.
uint64_t trim_to_content(const std::string& path) {
  const Fd f(path, O_RDWR);
  unsigned char head[48] = {0};
  read_at(f, path, head, sizeof head, 0);
  uint64_t end = 0;
  for (int k = 7; k >= 0; --k) end = (end << 8) | head[40 + k];
  SB_CHECK(head[8] == 0 && end > 0 && end <= file_size(f, path), "'", path,
           "': HDF5 left a superblock of a version samebits does not write");
  SB_CHECK(::ftruncate(f.fd, static_cast<off_t>(end)) == 0, "cannot trim '", path,
           "' to its content: ", std::strerror(errno));
  return end;
}

// Writes a store file: fill() lays it out through HDF5 in its temporary file, after data_bytes
// plus room for the metadata are reserved on disk, and names where the datasets' bytes go; they
// are written in one pass that also hashes the file (store_data.hpp: no image of the file in
// memory, no page-cache copy of a state of 8 bytes per parameter); then the seal, fsync and rename
// (h5::write_file_atomically). Its index entry.
StoreEntry write_store(const std::string& path, uint64_t data_bytes, std::size_t datasets, int64_t step, uint8_t kind,
                       const std::function<void(h5::File&, std::vector<RawWrite>&)>& fill) {
  StoreEntry e;
  e.step = step;
  e.kind = kind;
  h5::write_file_atomically(path, [&](const std::string& tmp) {
    std::vector<RawWrite> raw;
    {
      h5::File file = h5::File::create(tmp, h5::Create::truncate);
      reserve_space(tmp, data_bytes + (uint64_t{1} << 20) + 8192 * uint64_t(datasets));
      fill(file, raw);
      file.close();
    }
    const uint64_t length = trim_to_content(tmp);
    e.digest = write_store_data(tmp, length, std::move(raw)).digest;
    append_seal(tmp, length, e.digest);
    e.bytes = fs::file_size(tmp);
  });
  return e;
}

// Opens a store file after checking that it is the one the index names.
h5::File open_checked(const std::string& path, const StoreEntry& entry, std::string_view format) {
  const uint64_t digest = check_seal(path);
  SB_CHECK(digest == entry.digest, "'", path, "' is not the file the run file's index names for step ", entry.step,
           " (its content hash differs: replaced or from another run)");
  h5::check_structure(path, fs::file_size(path) - kSealBytes);
  h5::File file = h5::File::open(path, h5::Mode::read_only);
  const std::string found = file.attr_string("format");
  SB_CHECK(found == format, path, ": attribute format is '", found, "', expected '", format, "'");
  const int64_t version = file.attr_int("format_version");
  SB_CHECK(version == kFormatVersion, path, ": store file format version ", version, "; this samebits reads ",
           kFormatVersion);
  return file;
}

// The entry a store file name stands for ("state_step_000200.h5": step 200, a state); false for
// names samebits does not write.
bool parse_store_name(const std::string& name, int64_t& step, bool& state) {
  constexpr std::string_view suffix = ".h5";
  for (const std::string_view prefix : {std::string_view("state_step_"), std::string_view("snapshot_step_")}) {
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    step = std::stoll(digits);
    state = prefix == "state_step_";
    return name == std::string(state ? "state_" : "snapshot_") + step_name(step) + ".h5";
  }
  return false;
}

std::string file_name(const StoreEntry& e) {
  return std::string(e.is_state() ? "state_" : "snapshot_") + step_name(e.step) + ".h5";
}

}  // namespace

std::string store_dir(const std::string& run_path) {
  fs::path p(run_path);
  p.replace_extension(".store");
  return p.string();
}

std::string store_file(const std::string& run_path, const StoreEntry& entry) {
  return (fs::path(store_dir(run_path)) / file_name(entry)).string();
}

std::string relative_store_file(const std::string& run_path, const StoreEntry& entry) {
  return (fs::path(store_dir(run_path)).filename() / file_name(entry)).string();
}

namespace {

// One column of the index, rewritten in place: an extendible dataset resized to the entries and
// overwritten, so that commits reuse its chunks instead of leaving freed space in the run file.
template <class T>
void write_index_column(h5::Group& store, const char* name, const std::vector<T>& values) {
  h5::Dataset d = store.has_link(name) ? store.dataset(name) : store.create_extendible(name, h5::dtype_of<T>(), 0, 64);
  d.resize(values.size());
  if (!values.empty()) d.write<T>(values);
}

}  // namespace

void write_store_index(h5::File& run, const std::string& run_path, const std::vector<StoreEntry>& entries,
                       int64_t final_step) {
  // The links for h5py: every link under /snapshots and /states that is not exactly one the index
  // wants goes; the missing ones are made (unchanged links stay: commits leave no freed space).
  std::map<std::string, std::pair<std::string, std::string>> wanted;  // link → (file, object)
  for (const StoreEntry& e : entries) {
    const std::string file = relative_store_file(run_path, e);
    if (e.is_snapshot()) wanted["snapshots/" + step_name(e.step)] = {file, "/params"};
    if (e.is_state()) wanted["states/" + step_name(e.step)] = {file, "/"};
    if (e.step == final_step && e.is_state()) wanted["checkpoint"] = {file, "/"};
  }
  for (const char* group : {"snapshots", "states"}) {
    if (!run.has_link(group)) continue;
    h5::Group g = run.group(group);
    for (const std::string& name : g.names()) {
      const auto it = wanted.find(std::string(group) + "/" + name);
      if (it == wanted.end() || !g.is_external_link(name, it->second.first, it->second.second)) g.remove_link(name);
    }
  }
  if (run.has_link("checkpoint")) run.remove_link("checkpoint");
  for (const auto& [name, target] : wanted) {
    if (!run.has_link(name)) run.link_external(name, target.first, target.second);
  }
  std::vector<int64_t> steps;
  std::vector<uint8_t> kinds;
  std::vector<uint64_t> digests, bytes;
  for (const StoreEntry& e : entries) {
    steps.push_back(e.step);
    kinds.push_back(e.kind);
    digests.push_back(e.digest);
    bytes.push_back(e.bytes);
  }
  h5::Group store = run.require_group("store");
  store.set_attr("folder", fs::path(store_dir(run_path)).filename().string());
  write_index_column(store, "step", steps);
  write_index_column(store, "kind", kinds);
  write_index_column(store, "digest", digests);
  write_index_column(store, "bytes", bytes);
}

std::vector<StoreEntry> read_store_index(const h5::File& run, int64_t rows) {
  const h5::Group store = run.group("store");
  const h5::Dataset step = store.dataset("step");
  step.check(h5::DType::i64, {h5::kAny});
  const uint64_t n = step.rows();
  SB_CHECK(n <= uint64_t(rows) + 1, step.where(), ": ", n, " store files for ", rows, " recorded steps");
  store.dataset("kind").check(h5::DType::u8, {n});
  store.dataset("digest").check(h5::DType::u64, {n});
  store.dataset("bytes").check(h5::DType::u64, {n});
  const auto steps = step.read<int64_t>();
  const auto kinds = store.dataset("kind").read<uint8_t>();
  const auto digests = store.dataset("digest").read<uint64_t>();
  const auto bytes = store.dataset("bytes").read<uint64_t>();
  std::vector<StoreEntry> out;
  for (uint64_t i = 0; i < n; ++i) {
    const StoreEntry e{steps[i], kinds[i], digests[i], bytes[i]};
    SB_CHECK(e.step >= 0 && e.step <= rows && (i == 0 || e.step > out.back().step), store.where(), ": entry ", i,
             " is of step ", e.step, "; steps must ascend within the ", rows, " recorded");
    SB_CHECK(e.kind != 0 && (e.kind & ~kKnownBits) == 0 && (e.is_state() || (e.kind & kKeptBit) == 0), store.where(),
             ": entry ", i, " (step ", e.step, ") has kind ", int(e.kind),
             "; expected snapshot (1), state (2) and kept (4) bits, kept only on a state");
    out.push_back(e);
  }
  return out;
}

StoreEntry write_snapshot_file(const std::string& path, int64_t step, const std::string& experiment_id,
                               std::span<const float> flat_weights, const std::vector<TensorInfo>& tensors) {
  const uint64_t bytes = flat_weights.size() * sizeof(float);
  return write_store(path, bytes, tensors.size(), step, kSnapshotBit, [&](h5::File& file, std::vector<RawWrite>& raw) {
    file.set_attr("format", kSnapshotFormat);
    file.set_attr("format_version", kFormatVersion);
    file.set_attr("experiment_id", experiment_id);
    file.set_attr("step", step);
    h5::Group params = file.create_group("params");
    params.set_attr("step", step);
    write_params(params, flat_weights, tensors, raw);
  });
}

namespace {
// A state file of `bytes` data bytes in `datasets` datasets, its root filled by `fill`.
StoreEntry write_state_store(const std::string& path, int64_t step, uint64_t bytes, std::size_t datasets,
                             const std::function<void(h5::File&, std::vector<RawWrite>&)>& fill) {
  return write_store(path, bytes, datasets, step, kStateBit, [&](h5::File& file, std::vector<RawWrite>& raw) {
    file.set_attr("format", kStateFormat);
    file.set_attr("format_version", kFormatVersion);
    fill(file, raw);
    file.group("params").set_attr("step", step);
  });
}
}  // namespace

StoreEntry write_state_file(const std::string& path, const TrainerState& state,
                            const std::vector<TensorInfo>& tensors) {
  uint64_t bytes = state.weights.size() * sizeof(float);
  for (const StateArray& a : state.optimizer) bytes += a.data.size() * sizeof(float);
  return write_state_store(path, state.step, bytes, tensors.size() + state.optimizer.size(),
                           [&](h5::File& file, std::vector<RawWrite>& raw) { write_state(file, state, tensors, raw); });
}

StoreEntry write_state_file(const std::string& path, const TrainerState& head, const StateParts& parts,
                            const std::vector<TensorInfo>& tensors) {
  uint64_t bytes = flat_size(tensors) * sizeof(float);
  for (const uint64_t n : parts.sizes) bytes += n * sizeof(float);
  return write_state_store(
      path, head.step, bytes, tensors.size() + parts.names.size(),
      [&](h5::File& file, std::vector<RawWrite>& raw) { write_state(file, head, parts, tensors, raw); });
}

void read_store_params_kind(const std::string& path, ByteReader& params, ByteWriter& answer) {
  const StoreEntry entry = get_entry(params);
  const std::vector<TensorInfo> tensors = get_tensors(params, UINT64_MAX, path);
  params.finish();
  const h5::File file = open_checked(path, entry, entry.is_state() ? kStateFormat : kSnapshotFormat);
  const int64_t step = file.attr_int("step");
  SB_CHECK(step == entry.step, path, ": holds step ", step, ", the index says ", entry.step);
  answer.put_vector(read_params(file.group("params"), tensors));
}

void read_store_state_kind(const std::string& path, ByteReader& params, ByteWriter& answer) {
  const StoreEntry entry = get_entry(params);
  const std::vector<TensorInfo> tensors = get_tensors(params, UINT64_MAX, path);
  params.finish();
  const h5::File file = open_checked(path, entry, kStateFormat);
  put_state(answer, read_state(file, tensors));
}

namespace {
// The request of a store kind: the file's index entry and the run's tensor table.
ByteWriter store_request(const StoreEntry& entry, const std::vector<TensorInfo>& tensors) {
  ByteWriter params;
  put_entry(params, entry);
  put_tensors(params, tensors);
  return params;
}
}  // namespace

std::vector<float> read_store_params(const std::string& path, const StoreEntry& entry,
                                     const std::vector<TensorInfo>& tensors) {
  const std::vector<std::byte> answer = io::read_isolated("store-params", path, store_request(entry, tensors));
  ByteReader in = io::answer_reader(answer, path);
  std::vector<float> flat = in.get_vector<float>();
  in.finish();
  SB_CHECK(flat.size() == flat_size(tensors), path, ": parameters of step ", entry.step, " came back with ",
           flat.size(), " values, expected ", flat_size(tensors));
  return flat;
}

TrainerState read_store_state(const std::string& path, const StoreEntry& entry,
                              const std::vector<TensorInfo>& tensors) {
  SB_CHECK(entry.is_state(), path, ": the index records a snapshot of step ", entry.step, ", not a state");
  const std::vector<std::byte> answer = io::read_isolated("store-state", path, store_request(entry, tensors));
  ByteReader in = io::answer_reader(answer, path);
  TrainerState state = get_state(in, tensors, path);
  in.finish();
  SB_CHECK(state.step == entry.step, path, ": holds step ", state.step, ", the index says ", entry.step);
  return state;
}

void remove_unindexed_files(const std::string& run_path, const std::vector<StoreEntry>& entries) {
  std::error_code ec;
  const fs::path dir = store_dir(run_path);
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) files.push_back(e.path());
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    int64_t step = 0;
    bool state = false;
    const bool ours = parse_store_name(name, step, state);
    const bool indexed = ours && std::any_of(entries.begin(), entries.end(), [&](const StoreEntry& x) {
                           return x.step == step && x.is_state() == state;
                         });
    if ((ours && !indexed) || name.find(".h5.tmp.") != std::string::npos) fs::remove(file, ec);
  }
}

}  // namespace sb::run
