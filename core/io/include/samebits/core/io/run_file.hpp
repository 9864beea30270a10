// The run file (docs/FORMAT.md): one sealed HDF5 file per run holding what the run is (root
// attributes), one row per step of every statistic and fingerprint (/series), the tensor layout
// (/tensors) and the index of its store (/store, run_store.hpp): the snapshots, the states kept
// for resume and verification, and, once finished, the final state, each in its own file beside
// the run file. Crash safety: store files are written once before the commit that indexes them;
// the run file (rows and index: no parameters) is replaced whole (seal, fsync, rename) at each
// commit, so after a kill at any moment it is the complete file of the last commit and every file
// it names is complete. Everything read back is checked (seal, attribute types, dataset dtypes and
// shapes, consistency, each store file's hash): a damaged or hand-made file gives an sb::Error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "samebits/core/gpt_shape.hpp"
#include "samebits/core/io/h5.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::run {

constexpr int64_t kFormatVersion = 2;
constexpr std::string_view kRunFormat = "samebits-run";

// One tensor of the flat parameter buffer, as /tensors records it.
struct TensorInfo {
  std::string name;            // "h.0.attn.qkv.w"
  std::vector<int64_t> shape;  // rank 1 or 2, e.g. (3C, C)
  uint64_t offset = 0;         // first element in the flat buffer
  uint64_t numel = 0;
  bool operator==(const TensorInfo&) const = default;
};
std::vector<TensorInfo> tensor_infos(const std::vector<ParamView>& layout);
// Length of the flat buffer: max over tensors of offset + numel rounded up to kParamAlign.
uint64_t flat_size(const std::vector<TensorInfo>& tensors);

// What a store file holds, as bits of StoreEntry::kind.
enum StoreKind : uint8_t {
  kSnapshotBit = 1,  // the parameters are a snapshot of train.snapshot_steps
  kStateBit = 2,     // a full state: the file is a checkpoint (a run can resume or verify from it)
  kKeptBit = 4,      // a state kept for good (train.keep_states, or the final state)
};

// One row of the run file's /store index.
struct StoreEntry {
  int64_t step = 0;
  uint8_t kind = 0;     // StoreKind bits; a state that is also a snapshot serves both
  uint64_t digest = 0;  // XXH3-64 of the file's content (its seal)
  uint64_t bytes = 0;   // file size, seal included
  bool operator==(const StoreEntry&) const = default;
  bool is_state() const { return (kind & kStateBit) != 0; }
  bool is_snapshot() const { return (kind & kSnapshotBit) != 0; }
};

// The execution configuration of the session that last wrote the file (not part of the
// experiment: none of it changes a bit of the results).
struct Execution {
  std::string backend;       // Backend::describe(), e.g. "cpu (2 OpenMP threads, AVX2, …)"
  std::string communicator;  // Communicator::describe(), e.g. "local"
  int64_t threads = 0;       // OpenMP threads
  int64_t world_size = 1;
  int64_t micro_leaves = 0;  // leaves per micro-step (0: all of a rank's leaves at once)
  // The ranks' layout, "dp D x tp T" (docs/DISTRIBUTED.md §10): each session's line of
  // time_sessions names it.
  std::string layout = "dp 1 x tp 1";
  // The libraries' versions an evaluator needs to explain a difference, one "name: version" per
  // line (HDF5, OpenBLAS, MPI; on a GPU the CUDA runtime, cuBLAS, NCCL, driver, GPU and SMs).
  std::string environment;
};

// What a run file records at its creation (each later session records its own config text — its
// run.* options may differ — and execution).
struct RunHeader {
  std::string config_text;      // to_ini_text(config): the fully resolved configuration
  std::string experiment_id;    // experiment_id(config)
  std::string experiment_text;  // experiment_text(config)
  int64_t steps = 0;            // train.steps: the rows a finished run has
  std::vector<TensorInfo> tensors;
  // optim.qk_clip > 0: model.n_head (the QK-clip columns are recorded, /series/qk_max_logit with
  // attribute n_head); 0: they are not (the file has no such datasets).
  int64_t qk_n_head = 0;
  // The data the run trains on (data_manifest.hpp, manifest_text): recorded at creation, compared
  // before a resume or a verification; empty in files of samebits before it was recorded.
  std::string data_files;
  Execution execution;
};

enum class Status { running, finished, failed };
std::string_view to_string(Status status);

// The root attributes as read back (docs/FORMAT.md lists each).
struct RunInfo {
  int64_t format_version = 0;
  std::string samebits_version, samebits_commit;
  std::string config_text, experiment_id, experiment_text;
  int64_t steps = 0;
  Status status = Status::running;
  std::string error;  // why the run failed; empty otherwise
  Execution execution;
  std::string compiler, build_type, fp_flags, simd, fp_environment;
  std::string data_files;  // RunHeader::data_files ("" when the file predates it)
  // Not part of the run's content (two runs of the same experiment differ here):
  std::string host, time_started, time_updated, time_sessions;
};

// ---- the series --------------------------------------------------------------------------

// Columns of a series row: one value, one per tensor (layout order), one per collective kind, one
// per attention head of every block (n_layer × n_head, layer-major), one per routed expert of every
// Mixture-of-Experts block (block-major), or one per MoE block.
enum class Width { one, tensors, collectives, heads, experts, moe_blocks };

// The row widths of one run file: its tensor count, its blocks' heads (n_layer × n_head, 0 when
// the file has no QK-clip columns), its MoE blocks' routed experts and its MoE blocks (0: dense).
struct SeriesShape {
  std::size_t tensors = 0;
  std::size_t heads = 0;
  std::size_t experts = 0;
  std::size_t moe_blocks = 0;
};

// One /series (or /timing) dataset: f32/f64/i64/u64/u8, shape (steps) or (steps, width).
struct SeriesColumn {
  std::string_view path;  // "series/loss", "series/per_tensor/grad_norm", "timing/step_seconds"
  h5::DType dtype;
  Width width;
  std::string_view help;  // one line for docs/FORMAT.md
  // True when the values are a function of the experiment alone (the contract: equal bits on
  // every execution configuration); false for communication traffic (depends on the world size)
  // and wall time.
  bool experiment;
  // Appends this column's row for `r` (width × dtype bytes) to out.
  void (*append)(const StepResult& r, std::size_t tensors, std::vector<std::byte>& out);
  // Recorded only in runs with optim.qk_clip > 0 (SeriesShape::heads > 0); absent otherwise.
  bool qk_clip = false;
  // Recorded only in runs with Mixture-of-Experts blocks (SeriesShape::experts > 0).
  bool moe = false;
};
// Every column, in a fixed order (the one docs/FORMAT.md lists).
const std::vector<SeriesColumn>& series_columns();
// The shape of a run file of these tensors: heads = (blocks with an attn.qkv.w) × qk_n_head
// (0: no QK-clip columns; a qk_n_head that does not divide the blocks' width C is an error);
// experts = the rows of every h.L.moe.router.w, moe_blocks = their count.
SeriesShape series_shape(const std::vector<TensorInfo>& tensors, int64_t qk_n_head);
// Whether a run file of `shape` holds the column.
inline bool column_recorded(const SeriesColumn& c, const SeriesShape& shape) {
  return (!c.qk_clip || shape.heads > 0) && (!c.moe || shape.experts > 0);
}
// Values per row of the column in a run file of `shape` (1 for Width::one).
uint64_t column_values(const SeriesColumn& c, const SeriesShape& shape);

// ---- writing -------------------------------------------------------------------------------

// Writes a run file and its store; used by one process (rank 0). Rows are held in memory and
// reach the run file at each commit (checkpoint(), commit(), finish(), fail()); snapshots and
// states are written to their store files and indexed at the next commit, so the run file never
// holds a half-written step and never names a half-written file. In the background mode (what
// `samebits train` uses) a snapshot or state file is written by a thread while training goes on
// — one file at a time, the writer owning a copy of what it writes — during the next step: the
// next record() (or any call that touches the run file) waits for it, indexes it and makes the
// checkpoint's commit, so the run file still moves only from one complete commit to the next.
class RunWriter {
 public:
  // A new run file at `path` (an error if something exists there), status running, 0 steps.
  static RunWriter create(const std::string& path, const RunHeader& header);
  // Continues the run at `path` from `step`: its series cut back to `step` rows, later snapshots
  // and states dropped from the index (their files removed after the next commit), this session's
  // config text and execution recorded, status running. The file must hold `header`'s experiment
  // and at least `step` rows (find the step with run::find_resume_point).
  static RunWriter resume(const std::string& path, const RunHeader& header, int64_t step, const std::string& note);

  RunWriter(RunWriter&&) noexcept = default;
  RunWriter& operator=(RunWriter&&) noexcept = default;

  // One step's row (its stats.step must be the next step).
  void record(const StepResult& r);
  // The parameters after `step` (0: the initialisation), written to the store now; a state of the
  // same step already in the store serves as the snapshot (nothing is written twice).
  // flat_weights: (flat_size), asked for only when the snapshot is written (a copy of gigabytes
  // saved when the state serves); once written, its buffer serves the next state (take_spare_state).
  void snapshot(int64_t step, const std::function<std::vector<float>()>& flat_weights);
  void snapshot(int64_t step, std::vector<float> flat_weights) {
    snapshot(step, [&] { return std::move(flat_weights); });
  }
  // Writes the state to the store (atomically, sealed), commits the run file, then drops the
  // states older than the previous one that are neither kept nor snapshots (the last two stay).
  // keep: a state kept for good (train.keep_states). In the background mode the write and the
  // commit finish later (see above).
  void checkpoint(TrainerState state, bool keep = false);
  // The same from head's scalars and the parts' arrays, fetched one at a time while the file is
  // written — before the call returns, in either mode (the parts are not copied).
  void checkpoint(const TrainerState& head, const StateParts& parts, bool keep = false);
  // Pending rows and the index to the file (status running).
  void commit();
  // The last commit: status finished, `state` the final state (its store file written unless
  // this session's last checkpoint is of the same step), rolling states dropped. snapshot: the
  // final state is also a snapshot of train.snapshot_steps.
  void finish(TrainerState state, bool snapshot = false);
  void finish(const TrainerState& head, const StateParts& parts, bool snapshot = false);
  // Status failed with `message`; pending steps are kept (a resume cuts them back).
  void fail(const std::string& message);
  // The run's step count (attribute steps) from the next commit on: for a loop that learns it at
  // its end (samebits.torch.Recorder, which finishes at the steps it recorded).
  void set_steps(int64_t steps);

  // Store files written by a background thread from now on (off: each is written before the
  // call returns).
  void write_in_background(bool on) { background_ = on; }
  // Waits for the store file being written (if any), indexes it and makes the commit it was due;
  // a failed write is thrown here. Call before making the next large copy (a state) to hold one.
  void wait_store();
  // The buffers of the last state this writer wrote (empty at first), for the next export_state
  // to fill instead of allocating a new state.
  TrainerState take_spare_state() { return std::exchange(spare_, TrainerState{}); }

  const std::string& path() const { return path_; }
  int64_t steps_recorded() const { return committed_ + pending_rows_; }
  std::size_t pending_bytes() const;  // rows held until the next commit
  // Bytes this writer has written to files (run-file commits and store files, seals included).
  uint64_t bytes_written() const { return bytes_written_; }
  const std::vector<StoreEntry>& store_entries() const { return entries_; }

 private:
  // The store file in flight: its write, and what its entry and the run file get when it lands.
  struct StoreJob {
    std::future<StoreEntry> write;
    int64_t step = 0;
    uint8_t kind = 0;                             // kind bits for the entry (snapshot, state, kept)
    bool commit = false;                          // a checkpoint: commit the run file once the file is complete
    std::shared_ptr<TrainerState> state;          // a state job's state, kept for take_spare_state()
    std::shared_ptr<std::vector<float>> weights;  // a snapshot job's parameters, likewise
  };

  RunWriter(std::string path, RunHeader header, int64_t committed, std::vector<StoreEntry> entries);
  void commit_file(Status status, const std::string& error, int64_t final_step);
  // The state's store file (unless the store holds a state of its step) and its index entry; the
  // rolling states older than the previous one dropped.
  void store_state(TrainerState state, bool keep, bool commit);
  void store_state(const TrainerState& head, const StateParts& parts, bool keep, bool commit);
  // Both: the state of `step` by `write` (given the file's path); held: the state it reads, which
  // the job owns (null: the caller's parts, written before the call returns).
  void store_state(int64_t step, bool keep, bool commit, std::shared_ptr<TrainerState> held,
                   const std::function<StoreEntry(const std::string&)>& write);
  // The last commit of finish(): `store` writes the final state of `step`.
  void finish_at(int64_t step, bool snapshot, const std::function<void()>& store);
  // A store file write (in the background mode and when `background`: started on a thread),
  // landed by wait_store().
  void start_store(std::function<StoreEntry()> write, StoreJob job, bool background = true);
  void land_store(StoreEntry entry);
  void add_entry(const StoreEntry& entry);
  // Entries no longer indexed: their files are removed after the commit that drops them.
  void drop_entries(const std::function<bool(const StoreEntry&)>& drop);

  std::string path_;
  RunHeader header_;
  SeriesShape shape_;                            // of header_
  int64_t committed_ = 0;                        // rows in the file
  int64_t pending_rows_ = 0;                     // rows held in pending_
  std::vector<std::vector<std::byte>> pending_;  // per series column: (pending_rows_, width)
  std::vector<StoreEntry> entries_;              // the index as the next commit writes it
  std::vector<std::string> unlinked_;            // store files to remove after the next commit
  uint64_t bytes_written_ = 0;
  bool background_ = false;
  bool steps_set_ = false;  // set_steps: the next commit writes attribute steps
  std::optional<StoreJob> job_;
  TrainerState spare_;
};

// ---- reading -------------------------------------------------------------------------------

// A run file read after checking its seal and its whole structure: every attribute with its type,
// every series column with its dtype and shape (steps, width), /series/step equal to 1, 2, …, the
// tensor table consistent, the store index consistent. The file is parsed in a reader process
// (isolated_read.hpp) that hands back the attributes, the tensor table, the series and the index;
// store files are read the same way (seal, content hash equal to the index's, structure) when
// asked for. Nothing holds the file open.
class RunReader {
 public:
  static RunReader open(const std::string& path);

  const std::string& path() const { return path_; }
  const RunInfo& info() const { return info_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  int64_t steps_recorded() const { return rows_; }
  // The row widths of this file; shape().heads > 0: it records the QK-clip columns.
  const SeriesShape& shape() const { return shape_; }

  // A series column, row-major (steps_recorded, width). T must be the column's dtype.
  template <class T>
  std::vector<T> series(std::string_view column) const {
    return series_rows<T>(column, 0, uint64_t(rows_));
  }
  // Rows [first, first + count) of a series column.
  template <class T>
  std::vector<T> series_rows(std::string_view column, uint64_t first, uint64_t count) const {
    std::vector<T> out;
    const std::vector<std::byte>& bytes = column_rows(column, h5::dtype_of<T>(), first, count);
    const std::size_t per_row = rows_ == 0 ? 0 : bytes.size() / sizeof(T) / std::size_t(rows_);
    out.resize(std::size_t(count) * per_row);
    if (!out.empty()) std::memcpy(out.data(), bytes.data() + first * per_row * sizeof(T), out.size() * sizeof(T));
    return out;
  }
  // A column's values as raw little-endian bytes: (steps_recorded, width) elements of its dtype.
  // A column the file does not record (column_recorded) is an error naming it.
  std::vector<std::byte> series_bytes(const SeriesColumn& column) const;

  const std::vector<StoreEntry>& store_entries() const { return entries_; }  // ascending steps
  std::vector<int64_t> snapshot_steps() const;                               // ascending
  std::vector<int64_t> state_steps() const;                                  // ascending: every state the store holds
  std::vector<float> read_snapshot(int64_t step) const;                      // (flat_size)
  TrainerState read_state(int64_t step) const;                               // a state of state_steps()
  bool has_final_state() const;                                              // a finished run's last state
  // Read in a reader process at the first call; later calls return the same state (diff and
  // sweep report ask for it more than once).
  const TrainerState& read_final_state() const;

 private:
  RunReader() = default;
  const StoreEntry* entry(int64_t step) const;
  // The column's bytes after checking its dtype and that rows [first, first + count) exist.
  const std::vector<std::byte>& column_rows(std::string_view column, h5::DType dtype, uint64_t first,
                                            uint64_t count) const;
  std::string path_;
  RunInfo info_;
  std::vector<TensorInfo> tensors_;
  int64_t rows_ = 0;
  SeriesShape shape_;
  // per series_columns() entry: (rows_, width) values (empty for a column the file lacks)
  std::vector<std::vector<std::byte>> series_;
  std::vector<StoreEntry> entries_;
  mutable std::optional<TrainerState> final_state_read_;
};

// The layout of a config's model as the run file records it.
inline std::vector<TensorInfo> tensor_infos(const GPTConfig& model) { return tensor_infos(gpt_param_layout(model)); }

// "step_000100": the name of store files and of the run file's links (6 digits, more when needed).
std::string step_name(int64_t step);

}  // namespace sb::run
