// Op-hash streams (docs/TRACE.md): one Row per Backend op execution of a traced step — its call
// site (the innermost trace::Scope), the leaf it computes, the XXH3-64 of each input and output
// region and the first output's shape — recorded by a TracingBackend (tracing_backend.hpp). With
// tracing off a Scope is one pointer test: no string is built and no bit changes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"

namespace sb::trace {

struct Row {
  std::string site;               // "h.3.mlp.fc matmul forward" (the innermost scope; "" outside one)
  std::string op;                 // the Backend op: "gemm", "bias_backward", … or a trainer step
  int64_t leaf = -1;              // the global leaf index, -1 outside the leaves' forward/backward
  std::vector<uint64_t> inputs;   // det::fingerprint of each input region, in the op's order
  std::vector<uint64_t> outputs;  // … of each output region (after the op)
  std::vector<int64_t> shape;     // the first output's shape
  // The outputs' 32-bit elements, one region after another, when the recorder keeps values
  // (the replay of `samebits trace`, for ULP distances); empty otherwise.
  std::vector<uint32_t> values;
  std::vector<uint64_t> output_numel;  // (outputs) elements of each output region
  std::string name() const { return site.empty() ? op : site + " " + op; }
};

// The stream of one traced step on one rank, and the scope stack of its call sites.
class Recorder {
 public:
  explicit Recorder(bool keep_values = false) : keep_values_(keep_values) {}
  bool keep_values() const { return keep_values_; }
  void push(std::string site) { scopes_.push_back(std::move(site)); }
  void pop() { scopes_.pop_back(); }
  const std::string& site() const;
  void set_leaf(int64_t leaf) { leaf_ = leaf; }
  int64_t leaf() const { return leaf_; }
  // A row at the current site and leaf; the caller fills its hashes.
  Row& add(const char* op);
  std::vector<Row>& rows() { return rows_; }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  bool keep_values_;
  std::vector<std::string> scopes_;
  int64_t leaf_ = -1;
  std::vector<Row> rows_;
};

// A call site for the ops inside it: "<prefix><number><suffix>" (number < 0: "<prefix><suffix>"),
// formatted only while `backend` records a trace.
class Scope {
 public:
  Scope(const Backend& backend, const char* prefix, int64_t number = -1, const char* suffix = "");
  // A call site inside the current one: "<current site><infix><number>" ("muon newton_schulz
  // h.3.mlp.fc.w iter 2").
  static Scope within(const Backend& backend, const char* infix, int64_t number);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  explicit Scope(Recorder* recorder) : recorder_(recorder) {}
  Recorder* recorder_;
};

// One row per span of `flat` (backend memory) at the current site: op "<op> <names[t]>" ("<op>"
// for an empty name), output
// the span's fingerprint (computed where flat lives; values kept when the recorder keeps them),
// inputs the given hashes of that span (empty: none). Nothing when the backend is not tracing.
void record_spans(Backend& backend, const char* op, const float* flat, const std::vector<TensorSpan>& spans,
                  const std::vector<std::string>& names, const std::vector<std::vector<uint64_t>>& inputs = {});

// Rows in the order of one process: the leaves' rows by ascending leaf (each leaf's in recorded
// order), then the rows outside the leaves in recorded order — so the streams of the ranks of a
// world, concatenated, line up with one process's (each leaf is one rank's).
std::vector<Row> canonical_order(std::vector<Row> rows);

// Rows (without values) as bytes and back: a rank's stream sent to rank 0.
// (core/byte_codec.hpp: the row count, then each row's fields)
std::vector<std::byte> pack(const std::vector<Row>& rows);
std::vector<Row> unpack(const std::vector<std::byte>& bytes);

}  // namespace sb::trace
