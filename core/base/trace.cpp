// The op-hash stream's recorder, scopes and span rows (trace.hpp).
#include "samebits/core/trace.hpp"

#include <algorithm>
#include <limits>

#include "samebits/core/byte_codec.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::trace {

const std::string& Recorder::site() const {
  static const std::string none;
  return scopes_.empty() ? none : scopes_.back();
}

Row& Recorder::add(const char* op) {
  Row& r = rows_.emplace_back();
  r.site = site();
  r.op = op;
  r.leaf = leaf_;
  return r;
}

Scope::Scope(const Backend& backend, const char* prefix, int64_t number, const char* suffix)
    : recorder_(backend.tracer()) {
  if (recorder_ == nullptr) return;
  recorder_->push(number < 0 ? std::string(prefix) + suffix : std::string(prefix) + std::to_string(number) + suffix);
}

Scope Scope::within(const Backend& backend, const char* infix, int64_t number) {
  Recorder* recorder = backend.tracer();
  if (recorder != nullptr) recorder->push(recorder->site() + infix + std::to_string(number));
  return Scope(recorder);
}

Scope::~Scope() {
  if (recorder_ != nullptr) recorder_->pop();
}

void record_spans(Backend& backend, const char* op, const float* flat, const std::vector<TensorSpan>& spans,
                  const std::vector<std::string>& names, const std::vector<std::vector<uint64_t>>& inputs) {
  Recorder* rec = backend.tracer();
  if (rec == nullptr) return;
  std::vector<uint64_t> hashes(spans.size());
  backend.fingerprints(flat, spans, hashes.data());
  for (size_t t = 0; t < spans.size(); ++t) {
    Row& r = rec->add(op);
    if (!names[t].empty()) r.op += " " + names[t];
    if (t < inputs.size()) r.inputs = inputs[t];
    r.outputs = {hashes[t]};
    r.output_numel = {spans[t].numel};
    r.shape = {static_cast<int64_t>(spans[t].numel)};
    if (rec->keep_values()) {
      r.values.resize(spans[t].numel);
      backend.copy_to_host(r.values.data(), flat + spans[t].offset, spans[t].numel * sizeof(float));
    }
  }
}

std::vector<Row> canonical_order(std::vector<Row> rows) {
  const auto key = [](const Row& r) { return r.leaf < 0 ? std::numeric_limits<int64_t>::max() : r.leaf; };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return key(a) < key(b); });
  return rows;
}

std::vector<std::byte> pack(const std::vector<Row>& rows) {
  ByteWriter out;
  out.put(uint64_t{rows.size()});
  for (const Row& r : rows) {
    out.put_string(r.site);
    out.put_string(r.op);
    out.put(r.leaf);
    out.put_vector(r.inputs);
    out.put_vector(r.outputs);
    out.put_vector(r.shape);
    out.put_vector(r.output_numel);
  }
  return std::move(out.bytes());
}

std::vector<Row> unpack(const std::vector<std::byte>& bytes) {
  ByteReader in(bytes, "a rank's trace stream");
  const uint64_t n = in.get<uint64_t>();
  std::vector<Row> rows;
  for (uint64_t i = 0; i < n; ++i) {
    Row& r = rows.emplace_back();
    r.site = in.get_string();
    r.op = in.get_string();
    r.leaf = in.get<int64_t>();
    r.inputs = in.get_vector<uint64_t>();
    r.outputs = in.get_vector<uint64_t>();
    r.shape = in.get_vector<int64_t>();
    r.output_numel = in.get_vector<uint64_t>();
  }
  in.finish();
  return rows;
}

}  // namespace sb::trace
